"""query: the query language on a large catalogue (docs/query.md; docs/performance.md, "Queries").

Seeds a catalogue of HOSTS hosts (benchmarks/seed.py: 200 groups in five levels, three tags
a host), then, with the service stopped, gives every group a default port and makes every
second grouped host inherit it (so `port:` reads inherited values). On the service it times,
RUNS times each, one request at a time: the plain page (`GET /api/hosts?per_page=50`) and
`GET /api/hosts?q=...&per_page=50` for queries of each kind the list answers differently:
terms from the memory's sets (a word, a tag, a group path), the same with a word never asked
before (no kept set), slot scans (a hostname glob, an age), keys on inherited values (the
facts read for the hosts the other terms left) and `notes:`. Prints each query's median, p99
and maximum, and its median over the plain page's. Each kind is asked 20 times untimed first
(the start-up read of every row ends meanwhile), with values the timed runs do not use again.

Invariants: the catalogue, the service and their folder are removed whatever happens; every
answer is checked against a count the seed fixes, so a figure never times a refusal or an
empty page by mistake.
"""

import json
import os
import sqlite3
import urllib.parse

import benchlib
from benchlib import Client, median, percentile
from benchmarks import seed


def add_options(parser):
    parser.add_argument("--runs", type=int, default=50, help="requests of each kind (default 50)")


def _queries(hosts):
    """(label, q for run i, whether it must find hosts)."""
    # The seed's names end in one of 500 numbers, 40 hosts in a row sharing one.
    suffixes = max(1, min(500, hosts // 40))
    # The seed names group i "Group iiii", under group (i - 10) // 5: group 10 is under 0.
    return [
        ("3 terms from memory: word, tag, group path",
         lambda i: f'example tag:prod group:"Group {i % 9:04d}"', True),
        ("3 terms, a word never asked before",
         lambda i: f"prod-{(i * 7) % suffixes:03d} tag:prod -tag:team-{i % 40:02d}", True),
        ("3 terms with slot scans: tag, host glob, used",
         lambda i: f"tag:team-{i % 3:02d} host:*.prod.example.com used:>30d", True),
        # Odd teams hold odd hosts, whose even seq made half of the grouped ones inherit.
        ("3 terms with an inherited key: tag, port, word",
         lambda i: f"tag:team-{(2 * i + 1) % 40:02d} port:2200 {seed.ROLES[(2 * i + 1) % 10]}", True),
        ("2 terms with notes: (SQLite text): tag, notes",
         lambda i: f"tag:team-{i * 10 % 40:02d} notes:runbook", True),
    ]


def run(args, profile, smoke=False):
    hosts, runs = args.hosts, args.runs
    binary = benchlib.build(profile)
    folder = benchlib.scratch("hm-bench-query-")
    data_dir = os.path.join(folder, "data")
    _, note = seed.catalogue(binary, data_dir, hosts, groups=200, keys=2)
    _inherit_ports(data_dir)
    rows = {"plain page (no q)": []}
    found = {}
    with benchlib.Service(binary, data_dir=data_dir) as service:
        client = Client(service.port, timeout=120)
        # Warm-up, untimed: the start-up read of every row (docs/performance.md) ends, and
        # each kind of query is asked once with values the timed runs use again.
        for index in range(20):
            client.timed("GET", f"/api/hosts?per_page=50&page={1 + index % 3}")
            for _, query, _ in _queries(hosts):
                client.timed("GET", f"/api/hosts?per_page=1&q={urllib.parse.quote(query(index), safe='')}")
        for index in range(runs):
            elapsed, _ = client.timed("GET", f"/api/hosts?per_page=50&page={1 + index % 3}")
            rows["plain page (no q)"].append(elapsed)
            for label, query, must_find in _queries(hosts):
                q = urllib.parse.quote(query(20 + index), safe="")
                elapsed, data = client.timed("GET", f"/api/hosts?per_page=50&q={q}")
                total = json.loads(data)["total"]
                if must_find and not total:
                    benchlib.fail(f"q={query(20 + index)!r} found no host")
                found.setdefault(label, []).append(total)
                rows.setdefault(label, []).append(elapsed)
        client.close()
        status = service.proc_status()
        memory = (benchlib.kib(status["VmRSS"]) / 1024, benchlib.kib(status["VmHWM"]) / 1024)
    benchlib.forget(folder)
    plain = median(rows["plain page (no q)"])
    print(f"scripts/bench query {hosts} --runs {runs}: {hosts:,} hosts, 200 groups, every group a default "
          f"port and half the grouped hosts inheriting it; load average {benchlib.loadavg()} at start "
          f"(2 cores, shared); {benchlib.cpu_model()}")
    print(note)
    print("| request (page of 50) | hosts found (median) | median ms | p99 ms | max ms | median over the plain page ms |")
    print("|---|---|---|---|---|---|")
    for label, times in rows.items():
        total = f"{median(found[label]):,.0f}" if label in found else f"{hosts:,}"
        print(f"| {label} | {total} | {median(times):.2f} | {percentile(times, 99):.2f} | {max(times):.2f} "
              f"| {median(times) - plain:+.2f} |")
    for label, query, _ in _queries(hosts):
        print(f"- {label}: e.g. `q={query(1)}`")
    print(f"service memory after the runs: RSS {memory[0]:.1f} MiB, peak (VmHWM) {memory[1]:.1f} MiB")
    print(f"command: {benchlib.command_line()}")


def _inherit_ports(data_dir):
    """A default port for every group, every second grouped host inheriting it (service stopped)."""
    db = sqlite3.connect(os.path.join(data_dir, "host-manager.db"), isolation_level=None)
    try:
        db.execute("BEGIN")
        db.execute("UPDATE groups SET default_port = 2200")
        db.execute("UPDATE hosts SET port = NULL WHERE group_id IS NOT NULL AND seq % 2 = 0")
        db.execute("COMMIT")
    finally:
        db.close()
