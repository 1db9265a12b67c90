"""The catalogue run: host-manager against the ceilings of its own stack on this machine, on a
seeded catalogue, printed as one table of figures and ratios per catalogue size, and a table
of how the headline figures grow with the catalogue.

Sub-commands: http, list, search, groups, write, startup, unlock, memory, footprint (one
section each), all (every section) and, through scripts/bench smoke, every section on a tiny
data set.

Method:
1. Builds the service and the reference server (examples/reference-server.rs: a thread per
   connection answering the health body's bytes in one write_all, like ours), and starts
   nginx (Debian package, installed when missing) as the HTTP ceiling; wrk (Debian package)
   is installed when missing.
2. Seeds a data dir per catalogue size (scripts/benchmarks/seed.py: keys through the API,
   groups, hosts and tags through SQL while the service is stopped).
3. Measures over HTTP on 127.0.0.1, keep-alive; wrk and the service share the machine's
   cores: latency p50/p99 with `wrk -t1 -c1 --latency` (one request at a time: the latency
   one client sees), throughput with `wrk -t2 -c16 --latency` (req/s at saturation, and its
   p99); every HTTP figure is also given as a ratio to nginx measured in the same run under
   the same load. POST /api/hosts through wrk with a Lua body (wrk -s). Start-up, unlock and
   footprint are timed by python3 (subprocess, http.client, hashlib), and so are the figures
   of answers computed after a change or for a term never asked (one request at a time,
   keep-alive): the service keeps no answers, so every figure is of an answer computed for
   its request.
4. Prints the tables, the machine, the load average and the exact command.

Invariants: every service it starts goes through benchlib.Service (stopped and cleaned up on
any exit); one seeded data dir per size, removed at the end unless BENCH_KEEP_DATA copies it.
"""

import hashlib
import json
import os
import random
import re
import shutil
import ssl
import subprocess
import time

import benchlib
from benchlib import Client, call, failures, median, percentile, wrk
from benchmarks import plot, seed

SECTIONS = ["http", "list", "search", "groups", "write", "startup", "unlock", "memory", "footprint"]
HELP = {
    "http": "GET /api/health against nginx and the reference server (wrk)",
    "list": "host list pages: every sort, a deep page, random pages under every filter kind",
    "search": "search and tag filters asked again and again, and terms never asked before",
    "groups": "GET /api/groups, again and again, and right after a change",
    "write": "POST /api/hosts (one writer, 8 writers) next to an fsync, and the first list after a write",
    "startup": "start-up to SERVICE_PORT and to the first list answered",
    "unlock": "POST /api/vault/unlock next to OpenSSL's PBKDF2 at the same rounds",
    "memory": "RSS idle, with the list in memory, and its peak over the whole HTTP load",
    "footprint": "unique crates, crates in two versions, the stripped binary's size",
}
ENV = ["BENCH_HOSTS", "BENCH_GROUPS", "BENCH_KEYS", "BENCH_SECONDS", "BENCH_KEEP_DATA", "BENCH_PLOTS"]
EPILOG = """environment (the catalogue sub-commands):
  BENCH_HOSTS      catalogue sizes, comma-separated (default 100000), e.g. 10000,100000,1000000:
                   each size is seeded and measured in turn, then one table shows how the
                   headline figures grow
  BENCH_GROUPS, BENCH_KEYS  groups and keys seeded (default 2000 / 50)
  BENCH_SECONDS    wrk duration per throughput figure (default 10; latency runs take 2/5 of it)
  BENCH_KEEP_DATA  copy each seeded data dir to $BENCH_KEEP_DATA-<hosts>, for digging in
  BENCH_PLOTS      where the growth plots go when BENCH_HOSTS names more than one size
                   (default docs/figures, the plots docs/performance.md shows): one SVG per
                   unit, written by this run from its own figures"""
# The growth plots: file name, title, unit, and which headline figures each shows (those
# whose label holds the text).
PLOTS = [
    ("growth-latency.svg", "The host list and the group tree: one client's p50", "ms", "p50 ms"),
    ("growth-startup.svg", "Start-up: to SERVICE_PORT and to the first list answered", "ms", "median ms"),
    ("growth-memory.svg", "Resident memory", "MiB", ": MiB"),
]
# Sections measured on the running service, over HTTP.
HTTP_SECTIONS = {"http", "list", "search", "groups", "write", "memory", "unlock"}
# Sections that need nginx, the reference server and the wrk loads.
LOAD_SECTIONS = {"http", "list", "search", "groups", "write", "memory"}
SORTS = ["name", "hostname", "created_at", "last_used_at"]


def add_arguments(parser, section):
    """The options of the catalogue sub-command `section` ("all" for the whole run)."""
    if section == "startup":
        parser.add_argument("runs", nargs="?", type=int, help="starts to time (default 20)")
        parser.add_argument("--data-dir", help="start on this existing data dir instead of seeding one")
        parser.add_argument("--empty", action="store_true", help="start on a fresh empty data dir each run")
        parser.add_argument("--unclean", action="store_true",
                            help="remove the data dir's clean-close record before each start, so every start "
                                 "runs the full page check (PRAGMA quick_check), as after a crash")
        parser.add_argument("--binary", help="start this binary instead of the one built here (a baseline)")
    if section == "unlock":
        parser.add_argument("runs", nargs="?", type=int, help="unlocks to time (default 7)")
    if section in ("footprint", "all"):
        parser.add_argument("--clean-build", action="store_true",
                            help="also time a clean release build (into a temporary target dir; minutes)")


def run(section, args, profile, smoke=False):
    """Runs the catalogue sub-command `section` ("all": every section)."""
    wanted = set(SECTIONS) if section == "all" else {section}
    if "memory" in wanted:  # peak RSS means something only under the whole HTTP load
        wanted |= LOAD_SECTIONS
    Catalogue(wanted, args, profile, smoke).main()


def verdict(ok):
    return "met" if ok else "**missed**"


class Catalogue:
    """One catalogue run: the wanted sections on each catalogue size, then the tables."""

    def __init__(self, wanted, args, profile, smoke):
        self.wanted, self.args, self.profile, self.smoke = wanted, args, profile, smoke
        env = os.environ.get
        self.sizes = [int(size) for size in env("BENCH_HOSTS", "200" if smoke else "100000").split(",")]
        self.hosts = self.sizes[0]  # the size being measured
        self.groups = int(env("BENCH_GROUPS", 10 if smoke else 2_000))
        self.keys = int(env("BENCH_KEYS", 5 if smoke else 50))
        self.seconds = int(env("BENCH_SECONDS", 1 if smoke else 10))
        # The one-client latency run is shorter than the loaded run: one request at a time
        # settles its p50 and p99 sooner.
        self.lat_seconds = max(1, self.seconds * 2 // 5)
        self.startup_runs = getattr(args, "runs", None) if "startup" in wanted and len(wanted) == 1 else None
        self.startup_runs = self.startup_runs or (3 if smoke else 20)
        self.service = None  # the service being measured (its pid gives its CPU time)
        self.unlock_runs = getattr(args, "runs", None) if wanted == {"unlock"} else None
        self.unlock_runs = self.unlock_runs or (1 if smoke else 7)
        self.bin = benchlib.build(profile)
        self.ref_bin = benchlib.build(profile, "reference-server") if wanted & LOAD_SECTIONS else None
        if wanted & LOAD_SECTIONS:
            benchlib.need("wrk", "wrk")
        self.work = benchlib.scratch()
        self.data_dir = os.path.join(self.work, "data")
        self.rows = []      # (section, label, tool, p50, p99, rps, p99_load, ratio, goal, verdict)
        self.notes = []
        self.headline = {}  # label -> {hosts: figure}, for the growth table
        self.ref = {}       # nginx's figures, the ceiling of every ratio
        self.group_ids = []
        self.seeded = False

    # ------------------------------------------------------------ the run

    def main(self):
        loads = [benchlib.loadavg()]
        tables = []
        for size in self.sizes:
            self.hosts, self.rows = size, []
            self.run_size()
            tables.append((size, self.rows))
        self.rows = []
        if "footprint" in self.wanted:
            benchlib.log("footprint ...")
            self.run_footprint()
        loads.append(benchlib.loadavg())
        self.print_tables(tables, loads)
        self.write_plots()

    def needs_seed(self):
        if self.wanted & (HTTP_SECTIONS - {"unlock"}):
            return True
        return "startup" in self.wanted and not (self.args_of("data_dir") or self.args_of("empty"))

    def args_of(self, name):
        return getattr(self.args, name, None)

    def run_size(self):
        """Seeds a catalogue of `hosts` hosts and measures the wanted sections on it."""
        seeded = self.seeded = self.needs_seed()
        if seeded:
            benchlib.log(f"{self.hosts:,} hosts: seeding ...")
            self.group_ids, note = seed.catalogue(self.bin, self.data_dir, self.hosts, self.groups, self.keys)
            self.notes.append(note)
            kept = os.environ.get("BENCH_KEEP_DATA")
            if kept:
                shutil.copytree(self.data_dir, f"{kept}-{self.hosts}")
                self.notes.append(f"seeded data dir copied to {kept}-{self.hosts}")
        if "startup" in self.wanted:
            benchlib.log(f"{self.hosts:,} hosts: start-up ...")
            self.run_startup()
        if not self.wanted & HTTP_SECTIONS:
            return
        # Unlock alone reads no catalogue: a fresh data dir.
        with benchlib.Service(self.bin, data_dir=self.data_dir if seeded else None) as service:
            self.service = service
            time.sleep(0.3)
            idle = service.proc_status()
            call(service.port, "GET", "/api/hosts?per_page=1")
            listed = service.proc_status()
            ref_status = None
            if self.wanted & LOAD_SECTIONS:
                with benchlib.Service(self.ref_bin, data_dir=False) as reference:
                    benchlib.log(f"{self.hosts:,} hosts: HTTP measurements ...")
                    self.run_http(service.port, reference.port)
                    ref_status = reference.proc_status()
            if "unlock" in self.wanted:
                benchlib.log("unlock ...")
                self.run_unlock(service.port)
            end = service.proc_status()
        if "memory" in self.wanted:
            self.memory_rows(idle, listed, end, ref_status)

    # ------------------------------------------------------------ rows

    def measure(self, port, path, script=None, load_connections=16, load_threads=2, cpu=None):
        """Latency with one connection, throughput (and its p99) with `load_connections`;
        `cpu`: wrk runs on that core only."""
        if self.smoke:  # one short run stands for both: smoke keeps the tool working, no more
            both = wrk(port, path, 1, 2, 1, script, cpu)
            return both, both
        pid = self.service.pid if self.service and self.service.port == port else None
        before = _cpu_ticks(pid)
        single = wrk(port, path, 1, 1, self.lat_seconds, script, cpu)
        if pid:
            # The service's own CPU time a request (user + system, clock ticks): what an
            # answer costs the server, apart from the loopback and wrk sharing the cores.
            ticks = _cpu_ticks(pid) - before
            single["cpu"] = ticks * 1000 / os.sysconf("SC_CLK_TCK") / max(1, single["requests"])
        loaded = wrk(port, path, load_threads, load_connections, self.seconds, script, cpu)
        return single, loaded

    def http_row(self, section, label, single, loaded, goal, ok, tool="wrk"):
        ratio = f"{loaded['rps'] / self.ref['rps']:.2f}x" if self.ref else "-"
        failed = failures(single, loaded)
        if failed:
            ok = False
            goal += f" ({failed})"
        if "cpu" in single:
            label += f"; server CPU {single['cpu']:.3f} ms a request"
        self.rows.append((section, label, tool, f"{single['p50']:.3f}", f"{single['p99']:.3f}",
                          f"{loaded['rps']:,.0f}", f"{loaded['p99']:.2f}", ratio, goal,
                          verdict(ok) if ok is not None else ""))

    def timing_row(self, section, label, times, goal, limit):
        p50 = median(times)
        self.rows.append((section, label, "python3 http.client", f"{p50:.3f}", f"{percentile(times, 0.99):.3f}",
                          "-", "-", "-", goal, verdict(p50 < limit) if limit else ""))
        return p50

    def plain_row(self, section, label, tool, result, goal="", p50="-", p99="-"):
        self.rows.append((section, label, tool, p50, p99, "-", "-", "-", goal, result))

    def note_headline(self, label, value):
        self.headline.setdefault(label, {})[self.hosts] = value

    def lua(self, name, text):
        path = os.path.join(self.work, name)
        with open(path, "w") as out:
            out.write(text)
        return path

    # ------------------------------------------------------------ HTTP sections

    def run_http(self, port, ref_port):
        path_health = "/api/health"
        # The ceiling: nginx (Debian package, one worker, keep-alive) answering the same fixed
        # health body under the same loads; every other HTTP figure is a ratio to it.
        health_body = json.dumps(call(port, "GET", path_health), separators=(",", ":")).encode()
        with benchlib.Nginx(path_health, health_body) as nginx:
            n_single, n_loaded = self.measure(nginx.port, path_health)
        self.ref = dict(n_loaded, p50=n_single["p50"])
        self.rows.append(("http", "nginx, one worker, fixed health body", "wrk",
                          f"{n_single['p50']:.3f}", f"{n_single['p99']:.3f}", f"{n_loaded['rps']:,.0f}",
                          f"{n_loaded['p99']:.2f}", "1.00x", "the ceiling", ""))
        # Our own fixed-body server: the thread-per-connection model with no work at all.
        r_single, r_loaded = self.measure(ref_port, path_health)
        self.http_row("http", "reference server (examples/), fixed health body", r_single, r_loaded,
                      "the model's own ceiling", None)
        if "http" in self.wanted:
            single, loaded = self.measure(port, path_health)
            self.http_row("http", "GET /api/health", single, loaded, ">= 0.8x nginx req/s",
                          loaded["rps"] >= 0.8 * self.ref["rps"])
            if (os.cpu_count() or 1) >= 2:
                self.run_http_pinned(port, health_body)
        for section, parts in [("list", [self.run_list_pages, self.run_random_pages]),
                               ("search", [self.run_searches, self.run_first_searches]),
                               ("groups", [self.run_groups, self.run_groups_after_change]),
                               ("write", [self.run_writes, self.run_list_after_write])]:
            if section in self.wanted:
                for part in parts:
                    part(port)

    def run_http_pinned(self, port, health_body):
        """The health figures again on equal CPU: nginx (one worker) and then the service each
        bound to core 0, wrk to core 1. Unpinned, our threads use both cores against nginx's
        one worker, which flatters the ratio above; this form compares the servers' work."""
        path_health = "/api/health"
        with benchlib.Nginx(path_health, health_body) as nginx:
            benchlib.pin(nginx.pid, "0")
            n_single, n_loaded = self.measure(nginx.port, path_health, cpu=1)
        self.rows.append(("http", "nginx, one worker, core 0 only (wrk on core 1)", "wrk",
                          f"{n_single['p50']:.3f}", f"{n_single['p99']:.3f}", f"{n_loaded['rps']:,.0f}",
                          f"{n_loaded['p99']:.2f}", "1.00x (pinned)", "the ceiling on one core", ""))
        benchlib.pin(self.service.pid, "0")
        try:
            single, loaded = self.measure(port, path_health, cpu=1)
        finally:
            benchlib.pin(self.service.pid, f"0-{(os.cpu_count() or 1) - 1}")
        ratio = loaded["rps"] / n_loaded["rps"]
        latency = single["p50"] / n_single["p50"]
        self.rows.append(("http", f"GET /api/health, core 0 only (wrk on core 1); one-client p50 "
                          f"{latency:.2f}x nginx's", "wrk", f"{single['p50']:.3f}", f"{single['p99']:.3f}",
                          f"{loaded['rps']:,.0f}", f"{loaded['p99']:.2f}", f"{ratio:.2f}x (pinned)",
                          "reported, no goal", ""))

    def run_list_pages(self, port):
        """Page 1 and a deep page of every sort, asked again and again."""
        deep_page = max(1, min(1000, self.hosts // 50))
        for sort in SORTS:
            first = None
            for page in [1, deep_page]:
                path = f"/api/hosts?sort={sort}&page={page}&per_page=50"
                body = call(port, "GET", path)
                if body["total"] != self.hosts or len(body["items"]) != min(50, self.hosts - (page - 1) * 50):
                    benchlib.fail(f"{path} gave total {body['total']}, {len(body['items'])} items")
                single, loaded = self.measure(port, path)
                if page == 1:
                    first = single
                    self.http_row("list", f"GET /api/hosts?sort={sort}&per_page=50 page 1", single, loaded,
                                  "p50 < 1 ms, >= 8,000 req/s", single["p50"] < 1.0 and loaded["rps"] >= 8000)
                else:
                    ratio = single["p50"] / first["p50"]
                    self.http_row("list", f"... page {page} (p50 {ratio:.2f}x page 1)", single, loaded,
                                  "p50 <= 2x page 1", ratio <= 2.0)

    def run_random_pages(self, port):
        """A random page of 50 by a random sort and direction, under a random filter of a kind
        (none, group, tag, favorite, search, two at once), each request a new one."""
        rng = random.Random(18)
        group_ids = self.group_ids
        kinds = {
            "none": [""],
            "group": [f"group={gid}" for gid in rng.sample(group_ids, min(20, len(group_ids)))] + ["group="],
            "tag": [f"tag={tag}" for tag in seed.ENVS + seed.ROLES[:4] + ["team-07", "team-31"]],
            "favorite": ["favorite=true", "favorite=false"],
            "search": ["search=web", "search=prod-0", "search=7", "search=example", "search=cache-dev-1",
                       "search=10.0"],
            "two filters": ["tag=prod&favorite=false", f"group={group_ids[3]}&search=e", "tag=web&search=9"],
        }
        everything = []
        for kind, filters in kinds.items():
            queries = []
            for query in filters:
                total = call(port, "GET", f"/api/hosts?per_page=1&{query}")["total"]
                queries.append((query, max(1, -(-total // 50))))
            everything += queries
            kinds[kind] = queries
        kinds = {"any filter": everything, **kinds}
        for kind, queries in kinds.items():
            table = ", ".join(f'{{"{query}", {pages}}}' for query, pages in queries)
            script = self.lua("random-page.lua",
                              f"local queries = {{{table}}}\n"
                              'local sorts = {"name", "hostname", "created_at", "last_used_at"}\n'
                              'local orders = {"asc", "desc"}\n'
                              "request = function()\n"
                              "  local query = queries[math.random(#queries)]\n"
                              '  return wrk.format("GET", "/api/hosts?per_page=50&sort=" .. sorts[math.random(4)]'
                              ' .. "&order=" .. orders[math.random(2)] .. "&page=" .. math.random(1, query[2])'
                              ' .. "&" .. query[1])\n'
                              "end\n")
            single, loaded = self.measure(port, "/api/hosts", script)
            label = (f"GET /api/hosts, a random page of 50, random sort and order, filter: {kind} "
                     f"({len(queries)} queries)")
            self.http_row("list", label, single, loaded, "p50 < 0.3 ms", single["p50"] < 0.3)
            if kind == "any filter":
                self.note_headline("random page of 50, any sort and filter: p50 ms (wrk -t1 -c1)",
                                   f"{single['p50']:.3f}")

    def run_searches(self, port):
        for label, path in [
            ("search=web (3 chars, 10% of hosts)", "/api/hosts?search=web&per_page=50"),
            ("search=cache-prod-042 (rare)", "/api/hosts?search=cache-prod-042&per_page=50"),
            ("search=7 (1 char)", "/api/hosts?search=7&per_page=50"),
            ("search=eb (2 chars)", "/api/hosts?search=eb&per_page=50"),
            ("tag=prod (25% of hosts)", "/api/hosts?tag=prod&per_page=50"),
            ("tag=team-07 (2.5%)", "/api/hosts?tag=team-07&per_page=50"),
        ]:
            body = call(port, "GET", path)
            single, loaded = self.measure(port, path)
            self.http_row("search", f"GET /api/hosts?{label}, total {body['total']:,}", single, loaded,
                          "p50 < 2 ms", single["p50"] < 2.0)

    def run_first_searches(self, port):
        """Search terms of 1 to 20 characters, each asked once: 3 in 4 are parts of the seeded
        names and hostnames, the rest random letters."""
        rng = random.Random(7)
        terms, seen = [], set()
        per_length = 3 if self.smoke else 12
        while len(terms) < 20 * per_length:
            length = len(terms) // per_length + 1
            n = rng.randrange(self.hosts)
            text = rng.choice([seed.name_of(n).lower(), seed.hostname_of(n)])
            if rng.random() < 0.75 and len(text) >= length:
                start = rng.randrange(len(text) - length + 1)
                term = text[start:start + length]
            else:
                term = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(length))
            if term not in seen and all(c.isalnum() or c in ".-" for c in term):
                seen.add(term)
                terms.append(term)
        client = Client(port)
        times = {}
        for term in terms:
            times.setdefault(len(term), []).append(client.timed("GET", f"/api/hosts?search={term}&per_page=50")[0])
        every = [time for group in times.values() for time in group]
        p50 = self.timing_row("search", f"GET /api/hosts?search=..., a term never asked before, 1 to 20 characters "
                              f"({len(every)} terms, each once)", every, "p50 < 1 ms", 1.0)
        self.note_headline("search, a term never asked, 1-20 chars: p50 ms", f"{p50:.3f}")
        for low, high in [(1, 1), (2, 3), (4, 8), (9, 20)]:
            bucket = [time for length, group in times.items() if low <= length <= high for time in group]
            self.timing_row("search", f"... of {low}-{high} characters", bucket, "", None)

    def run_groups(self, port):
        """The whole tree asked again and again: by wrk, and by one python3 keep-alive client
        next to GET /api/health on the same connection."""
        body = call(port, "GET", "/api/groups")
        size = len(json.dumps(body))
        single, loaded = self.measure(port, "/api/groups")
        self.http_row("groups", f"GET /api/groups ({self.groups:,} groups, {size / 1024:.0f} KiB), "
                      "asked again and again", single, loaded, "p50 < 10 ms", single["p50"] < 10.0)
        requests = 20 if self.smoke else 300
        client = Client(port)
        trees = [client.timed("GET", "/api/groups")[0] for _ in range(requests)]
        healths = [client.timed("GET", "/api/health")[0] for _ in range(requests)]
        nodes, depth = _tree_shape(body["items"], 1)
        grouped = sum(item["total_host_count"] for item in body["items"])
        ratio = median(trees) / median(healths)
        self.timing_row("groups", f"... one python3 client, {requests} requests ({nodes} groups, "
                        f"{len(body['items'])} top-level, depth {depth}, {grouped:,} grouped hosts; "
                        f"{ratio:.1f}x GET /api/health's median {median(healths):.3f} ms)", trees, "", None)

    def run_groups_after_change(self, port):
        """GET /api/groups right after a change: a host moved to another group (its counts),
        or a group renamed (its place among its siblings)."""
        rng = random.Random(6)
        client = Client(port)
        group_ids = self.group_ids
        host_ids = [host["id"] for host in call(port, "GET", "/api/hosts?per_page=100")["items"]]
        for label, change in [
            ("a host moved to another group", lambda index: client.timed(
                "PUT", f"/api/hosts/{rng.choice(host_ids)}/move", {"group_id": rng.choice(group_ids)})),
            ("a group renamed", lambda index: client.timed(
                "PUT", f"/api/groups/{rng.choice(group_ids)}", {"name": f"Renamed {index:05d}"})),
        ]:
            times = []
            for index in range(20 if self.smoke else 200):
                change(index)
                times.append(client.timed("GET", "/api/groups")[0])
            p50 = self.timing_row("groups", f"GET /api/groups right after a change: {label}", times,
                                  "p50 < 2 ms", 2.0)
            self.note_headline(f"GET /api/groups right after {label}: p50 ms", f"{p50:.3f}")

    def run_writes(self, port):
        body = {"name": "bench post", "hostname": "post.bench.example.com", "port": 22,
                "username": "deploy", "auth": {"type": "agent"}, "group_id": self.group_ids[0],
                "tags": ["bench", "post"]}
        script = self.lua("post.lua", 'wrk.method = "POST"\n'
                                      'wrk.headers["Content-Type"] = "application/json"\n'
                                      f"wrk.body = '{json.dumps(body)}'\n")
        # The write floor: one fsync of a 4 KiB append on the data dir's file system (every
        # commit writes the WAL, which synchronous=NORMAL fsyncs at checkpoints: a process
        # crash loses nothing acknowledged).
        probe = os.path.join(self.data_dir, "fsync-probe")
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        syncs = []
        for _ in range(20 if self.smoke else 200):
            os.write(fd, b"x" * 4096)
            started = time.perf_counter()
            os.fsync(fd)
            syncs.append((time.perf_counter() - started) * 1000)
        os.close(fd)
        os.unlink(probe)
        fsync_p50 = median(syncs)
        self.rows.append(("write", "floor: fsync of a 4 KiB append in the data dir", "python3 os.fsync",
                          f"{fsync_p50:.3f}", f"{percentile(syncs, 0.99):.3f}",
                          f"{1000 / fsync_p50:,.0f}", "-", "-", "", ""))
        before = call(port, "GET", "/api/hosts?per_page=1")["total"]
        single = wrk(port, "/api/hosts", 1, 1, 1 if self.smoke else self.lat_seconds, script)
        self.http_row("write", f"POST /api/hosts, one writer (p50 {single['p50'] / fsync_p50:.2f}x one fsync)",
                      single, single, "p50 < 1 ms", single["p50"] < 1.0)
        self.rows[-1] = self.rows[-1][:5] + (f"{single['rps']:,.0f}", "-") + self.rows[-1][7:]
        loaded = wrk(port, "/api/hosts", 2, 8, 1 if self.smoke else self.seconds, script)
        after = call(port, "GET", "/api/hosts?per_page=1")["total"]
        created = single["requests"] + loaded["requests"]
        # wrk counts only the responses that arrived before its deadline; the service may
        # have committed a few more that were in flight.
        ok = not loaded["failed"] and after - before >= created
        self.rows.append(("write", f"POST /api/hosts, 8 concurrent writers ({after - before:,} created, "
                          f"{created:,} sent)", "wrk", f"{loaded['p50']:.3f}", f"{loaded['p99']:.3f}",
                          f"{loaded['rps']:,.0f}", f"{loaded['p99']:.2f}",
                          f"{loaded['rps'] / self.ref['rps']:.2f}x", "no error",
                          verdict(ok) + (f" ({failures(loaded)})" if loaded["failed"] else "")))

    def run_list_after_write(self, port):
        """POST a host, then the first list after it: a random page by a random sort."""
        rng = random.Random(5)
        client = Client(port)
        times = []
        for index in range(20 if self.smoke else 200):
            body = {"name": f"{rng.choice(seed.ROLES)}-after-{index:04d}",
                    "hostname": f"after{index}.bench.example.com", "port": 22, "username": "deploy",
                    "auth": {"type": "agent"}, "group_id": rng.choice(self.group_ids),
                    "tags": [rng.choice(seed.ENVS)]}
            client.timed("POST", "/api/hosts", body, 201)
            sort, order = rng.choice(SORTS), rng.choice(["asc", "desc"])
            page = rng.randrange(1, max(2, self.hosts // 50))
            times.append(client.timed("GET", f"/api/hosts?per_page=50&sort={sort}&order={order}&page={page}")[0])
        p50 = self.timing_row("write", "the first GET /api/hosts after a POST (a random page by a random sort)",
                              times, "p50 < 1 ms", 1.0)
        self.note_headline("first list after a write: p50 ms", f"{p50:.3f}")

    # ------------------------------------------------------------ start-up, unlock, memory, footprint

    def run_startup(self):
        binary = os.path.abspath(self.args_of("binary")) if self.args_of("binary") else self.bin
        data_dir = self.args_of("data_dir")
        if self.args_of("empty"):
            where = "a fresh empty data dir each run"
        elif data_dir:
            where = f"data dir {data_dir}"
        else:
            data_dir, where = self.data_dir, f"{self.hosts:,} hosts"
        if self.args_of("unclean"):
            where += ", its clean-close record removed before each start (full page check)"

        def start():
            if data_dir and self.args_of("unclean"):
                record = os.path.join(data_dir, "host-manager.db-clean")
                if os.path.exists(record):
                    os.remove(record)
            return benchlib.Service(binary, data_dir=data_dir)

        times = []
        for _ in range(self.startup_runs):
            with start() as service:
                times.append(service.start_ms)
        limit = 20 if self.hosts <= 100_000 else 50
        p50 = median(times)
        self.rows.append(("startup", f"start-up, spawn to SERVICE_PORT, {where} ({self.startup_runs} runs; "
                          f"p90 {percentile(times, 0.9):.1f}, min {min(times):.1f}, max {max(times):.1f})",
                          "python3 subprocess", f"{p50:.1f}", f"{percentile(times, 0.99):.1f}", "-", "-", "-",
                          f"median < {limit} ms", verdict(p50 < limit)))
        self.note_headline("start-up to SERVICE_PORT: median ms", f"{p50:.1f}")
        # The list is read into memory after SERVICE_PORT: the first list waits for it.
        firsts = []
        for _ in range(3):
            started = time.perf_counter()
            with start() as service:
                call(service.port, "GET", "/api/hosts?per_page=50")
                firsts.append((time.perf_counter() - started) * 1000)
        p50 = median(firsts)
        self.rows.append(("startup", "start-up to the first GET /api/hosts answered (the list read into memory; "
                          "3 runs)", "python3 subprocess", f"{p50:.1f}", f"{max(firsts):.1f}", "-", "-", "-", "", ""))
        self.note_headline("start-up to the first list answered: median ms", f"{p50:.0f}")

    def run_unlock(self, port):
        password = "bench unlock password"
        call(port, "PUT", "/api/vault/password", {"new_password": password})
        ours, openssl = [], []
        for _ in range(self.unlock_runs):  # interleaved, so load from elsewhere weighs on both alike
            call(port, "POST", "/api/vault/lock")
            started = time.perf_counter()
            call(port, "POST", "/api/vault/unlock", {"password": password})
            ours.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            hashlib.pbkdf2_hmac("sha256", password.encode(), os.urandom(16), 600_000, 32)
            openssl.append((time.perf_counter() - started) * 1000)
        mine, theirs = median(ours), median(openssl)
        self.rows.append(("unlock", f"OpenSSL PBKDF2-SHA256 600,000 rounds ({ssl.OPENSSL_VERSION}, python3 hashlib)",
                          "python3 hashlib", f"{theirs:.1f}", f"{max(openssl):.1f}", "-", "-", "1.00x",
                          "the ceiling", ""))
        self.rows.append(("unlock", f"POST /api/vault/unlock over HTTP ({self.unlock_runs} runs, max as p99; "
                          f"min {min(ours):.1f})", "python3 http.client", f"{mine:.1f}", f"{max(ours):.1f}", "-",
                          "-", f"{mine / theirs:.2f}x", "<= 1.0x OpenSSL", verdict(mine <= theirs)))

    def memory_rows(self, idle, listed, end, ref_status):
        limit = 64 if self.hosts <= 100_000 else 256
        mib = lambda status, field: benchlib.kib(status[field]) / 1024
        self.plain_row("memory", "idle RSS 0.3 s after start, no request yet (VmRSS)", "/proc/PID/status",
                       f"{mib(idle, 'VmRSS'):.1f} MiB")
        self.plain_row("memory", "RSS once the first list is answered (the list in memory), no other request yet",
                       "/proc/PID/status", f"{mib(listed, 'VmRSS'):.1f} MiB")
        peak = mib(end, "VmHWM")
        self.plain_row("memory", f"peak RSS over the whole run (VmHWM; {end['Threads']} threads at the end)",
                       "/proc/PID/status", f"{peak:.1f} MiB " + verdict(peak * 2**20 < limit * 1e6), f"< {limit} MB")
        self.plain_row("memory", "reference server peak RSS (VmHWM)", "/proc/PID/status",
                       f"{mib(ref_status, 'VmHWM'):.1f} MiB")
        self.note_headline("RSS with the list in memory: MiB", f"{mib(listed, 'VmRSS'):.1f}")
        self.note_headline("peak RSS over the run: MiB", f"{mib(end, 'VmHWM'):.1f}")

    def run_footprint(self):
        tree = _cargo(["tree", "-e", "normal", "--prefix", "none", "--locked"])
        crates = {re.sub(r" \((\*|proc-macro)\)$", "", line) for line in tree.splitlines() if line.strip()}
        unique = len(crates) - 1
        dupes = _cargo(["tree", "-e", "normal", "-d", "--locked"])
        dup_names = sorted({line.split()[0] for line in dupes.splitlines()
                            if line and not line[0].isspace() and line[0].isalnum()})
        self.plain_row("footprint", "unique crates, `cargo tree -e normal` de-duplicated, root excluded",
                       "cargo tree", f"{unique}  " + verdict(unique <= 100), "<= 100")
        self.plain_row("footprint", "crates in two versions, `cargo tree -e normal -d`", "cargo tree",
                       f"{len(dup_names)} {' '.join(dup_names)} " + verdict(not dup_names), "0")
        stripped = os.path.join(self.work, "host-manager.stripped")
        subprocess.run(["strip", "-o", stripped, self.bin], check=True)
        size = os.path.getsize(stripped) / 2**20
        self.plain_row("footprint", f"{self.profile} binary, stripped copy (unstripped "
                       f"{os.path.getsize(self.bin) / 2**20:.1f} MiB)", "strip",
                       f"{size:.2f} MiB " + verdict(size * 2**20 < 6e6), "< 6 MB")
        if self.args_of("clean_build"):
            target = os.path.join(self.work, "target")
            started = time.perf_counter()
            _cargo(["build", "--release", "--locked", "--quiet", "--target-dir", target])
            self.plain_row("footprint", "clean release build, fresh --target-dir (crates already downloaded)",
                           "cargo build", f"{time.perf_counter() - started:.0f} s")
            shutil.rmtree(target, ignore_errors=True)

    # ------------------------------------------------------------ output

    def print_tables(self, tables, loads):
        cores = os.cpu_count()
        print(f"host-manager benchmarks: `{benchlib.command_line(ENV)}`")
        print(f"machine: {cores} cores ({benchlib.cpu_model()}), {self.profile} build; load average "
              f"{loads[0]} at start, {loads[1]} at end (other builds share the machine)")
        if self.seeded:
            print(f"data: {', '.join(f'{size:,}' for size in self.sizes)} hosts, {self.groups:,} groups, "
                  f"{self.keys} keys; wrk {self.seconds} s at -t2 -c16 (throughput) and {self.lat_seconds} s at "
                  f"-t1 -c1 (latency); wrk and the service share the {cores} cores")
        header = ("what", "tool", "p50 ms", "p99 ms", "req/s (16 conn)", "p99 ms (16 conn)",
                  "req/s vs nginx", "goal", "result")
        for size, table in tables + ([("footprint", self.rows)] if self.rows else []):
            if not table:
                continue
            print()
            if isinstance(size, int):
                print(f"{size:,} hosts:" if self.seeded else "no seeded catalogue:")
            else:
                print("footprint:")
            print()
            print("| " + " | ".join(header) + " |")
            print("|" + "|".join("---" for _ in header) + "|")
            for row in table:
                print("| " + " | ".join(row[1:]) + " |")
        if len(self.sizes) > 1:
            print()
            print("How the headline figures grow with the catalogue:")
            print()
            print("| figure | " + " | ".join(f"{size:,} hosts" for size in self.sizes) + " |")
            print("|---|" + "|".join("---" for _ in self.sizes) + "|")
            for label, values in self.headline.items():
                print(f"| {label} | " + " | ".join(values.get(size, "-") for size in self.sizes) + " |")
        print()
        print("p50/p99: one request at a time (wrk -t1 -c1, or the python3 timings); req/s and its p99: "
              "wrk -t2 -c16 keep-alive (POST with 8 writers: -t2 -c8, and its p50/p99 are under that load).")
        for note in self.notes:
            print(note)


    def write_plots(self):
        """The growth table as SVG plots (docs/performance.md shows them): with more than one
        catalogue size into BENCH_PLOTS (default docs/figures); a smoke run writes them into its
        scratch dir and reads them back as XML, so the plotting keeps working."""
        if len(self.sizes) < 2 and not self.smoke:
            return
        default = self.work if self.smoke else os.path.join(benchlib.ROOT, "docs", "figures")
        folder = os.environ.get("BENCH_PLOTS", default)
        os.makedirs(folder, exist_ok=True)
        for name, title, unit, ending in PLOTS:
            series = {label: {size: plot.leading_number(text) for size, text in values.items()}
                      for label, values in self.headline.items() if ending in label}
            if not series:
                continue
            path = os.path.join(folder, name)
            with open(path, "w") as out:
                out.write(plot.growth_svg(title, unit, self.sizes, series))
            if self.smoke:
                import xml.etree.ElementTree as ElementTree
                ElementTree.parse(path)  # raises on anything but well-formed XML
            benchlib.log(f"plot: {path}")


def _cpu_ticks(pid):
    """User and system CPU time of process `pid` so far, in clock ticks (0 without one)."""
    if not pid:
        return 0
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _cargo(args):
    return subprocess.run(["cargo", *args], cwd=benchlib.ROOT, capture_output=True, text=True, check=True).stdout


def _tree_shape(items, depth):
    """(groups, depth) of a group tree."""
    nodes, deepest = 0, depth - 1 if not items else depth
    for item in items:
        below, below_depth = _tree_shape(item["children"], depth + 1)
        nodes += 1 + below
        deepest = max(deepest, below_depth)
    return nodes, deepest
