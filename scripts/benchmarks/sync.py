"""sync: what sync costs two devices that share 100,000 hosts (docs/sync.md, "Figures").

Seeds HOSTS hosts (benchmarks/seed.py) on device A, sets sync up on a shared folder (A's
first bundle), then sets it up on an empty device B (B joins by merging every record). Then
RUNS rounds: 1% of the hosts edited on A and another 1% on B, A's cycle (its changes stamped
and its bundle written), then B's cycle: B's own 1% stamped and A's bundle (1% changed)
merged, applied after a snapshot and written back: the figure the 2 s goal is about. A cycle
with nothing new (an idle look) is timed too.

Invariants: every answer's status and report are checked (the merge applied exactly A's
edits), so a figure never times a refusal; the catalogue, both services and the folder are
removed whatever happens.
"""

import json
import os
import random
import sqlite3

import benchlib
from benchlib import Client, median
from benchmarks import seed

PASSPHRASE = "bench sync passphrase"


def add_options(parser):
    parser.add_argument("--runs", type=int, default=3, help="rounds of 1%% edits on each side (default 3)")


def host_ids(data_dir):
    db = sqlite3.connect(f"file:{os.path.join(data_dir, 'host-manager.db')}?mode=ro", uri=True)
    try:
        return [row[0] for row in db.execute("SELECT id FROM hosts ORDER BY seq")]
    finally:
        db.close()


def edit(port, ids, tag):
    client = Client(port)
    for host in ids:
        client.timed("PUT", f"/api/hosts/{host}", {"notes": f"edited {tag}"})
    client.close()


def timed(port, method, path, body=None):
    """One request on a connection of its own: a kept connection would sit idle (and be
    closed by the service) while the other device works."""
    client = Client(port, timeout=1200)
    try:
        return client.timed(method, path, body)
    finally:
        client.close()


def run(args, profile, smoke=False):
    hosts, runs = args.hosts, args.runs
    binary = benchlib.build(profile)
    folder = benchlib.scratch("hm-bench-sync-")
    shared = os.path.join(folder, "shared")
    os.makedirs(shared)
    data_a, data_b = os.path.join(folder, "a"), os.path.join(folder, "b")
    _, note = seed.catalogue(binary, data_a, hosts, groups=200, keys=2)
    ids = host_ids(data_a)
    changed = max(1, hosts // 100)
    rows = {}
    # The background looks off (an hour apart): each cycle timed is the one the request runs.
    quiet = {"HOST_MANAGER_TEST_SYNC_POLL_MS": "3600000", "HOST_MANAGER_TEST_SYNC_DEBOUNCE_MS": "3600000"}
    with benchlib.Service(binary, data_dir=data_a, env=quiet) as a, \
            benchlib.Service(binary, data_dir=data_b, env=quiet) as b:
        setup = {"dir": shared, "passphrase": PASSPHRASE}
        rows["A: set up (its first bundle)"] = [timed(a.port, "PUT", "/api/sync", setup)[0]]
        elapsed, body = timed(b.port, "PUT", "/api/sync", setup)
        joined = len(json.loads(body)["report"]["added"])
        if joined < hosts:
            benchlib.fail(f"B joined with {joined} records, A holds {hosts} hosts")
        rows["B: set up, joins by merging everything"] = [elapsed]
        timed(a.port, "POST", "/api/sync/now")
        rng = random.Random(34)
        for round_ in range(runs):
            picked = rng.sample(ids, 2 * changed)
            edit(a.port, picked[:changed], f"a{round_}")
            edit(b.port, picked[changed:], f"b{round_}")
            rows.setdefault("A: cycle after 1% local edits (stamp, write)", []).append(
                timed(a.port, "POST", "/api/sync/now")[0])
            elapsed, body = timed(b.port, "POST", "/api/sync/now")
            report = json.loads(body)
            if len(report["updated"]) != changed or report["conflicts"] or report["skipped"]:
                benchlib.fail(f"B's merge answered {len(report['updated'])} updated, expected {changed}: {body[:300]!r}")
            rows.setdefault("B: cycle merging A's 1% with its own 1% (the goal: under 2 s)", []).append(elapsed)
            rows.setdefault("B: idle cycle (nothing new)", []).append(timed(b.port, "POST", "/api/sync/now")[0])
            # A takes B's edits before the next round, so the next edits are not concurrent.
            timed(a.port, "POST", "/api/sync/now")
        bundle = max(os.path.getsize(os.path.join(shared, name)) for name in os.listdir(shared))
    benchlib.forget(folder)
    print(f"scripts/bench sync {hosts} --runs {runs}: {hosts:,} hosts on each side, {changed:,} edited "
          f"on each per round; load average {benchlib.loadavg()} at start (2 cores, shared); "
          f"{benchlib.cpu_model()}")
    print(note)
    print(f"bundle file: {bundle / 1e6:.1f} MB")
    print("| step | median ms | max ms |")
    print("|---|---|---|")
    for label, times in rows.items():
        print(f"| {label} | {median(times):.1f} | {max(times):.1f} |")
    print(f"\ncommand: {benchlib.command_line()}")
