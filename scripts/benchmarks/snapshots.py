"""snapshots: what a snapshot of the catalogue costs (docs/reliability.md, "Snapshots").

Seeds a catalogue of HOSTS hosts (benchmarks/seed.py), starts the service on it, and times
RUNS manual snapshots (`POST /api/snapshots`: SQLite's VACUUM INTO a new file, the price every
import and batch delete now pays first) and RUNS restores of the first one (each takes a
`restore` snapshot, replaces the catalogue in one transaction and reads the list's memory
again; timed to the answer, then until the list answers). Prints medians and maxima and the
snapshot file's size.

Invariants: the catalogue, the service and their folder are removed whatever happens; every
answer's status and counts are checked, so a figure never times a refusal.
"""

import json
import os
import time

import benchlib
from benchlib import Client, median
from benchmarks import seed


def add_options(parser):
    parser.add_argument("--runs", type=int, default=5, help="snapshots and restores (default 5)")


def run(args, profile, smoke=False):
    hosts, runs = args.hosts, args.runs
    binary = benchlib.build(profile)
    folder = benchlib.scratch("hm-bench-snapshots-")
    data_dir = os.path.join(folder, "data")
    _, note = seed.catalogue(binary, data_dir, hosts, groups=200, keys=2)
    rows = {"POST /api/snapshots": [], "POST /api/snapshots/:id/restore": [],
            "restore, then the list answers": []}
    size = 0
    with benchlib.Service(binary, data_dir=data_dir) as service:
        client = Client(service.port, timeout=600)
        client.timed("GET", "/api/hosts?per_page=1")
        first = None
        for _ in range(runs):
            elapsed, body = client.timed("POST", "/api/snapshots", {"label": "bench"}, 201)
            taken = json.loads(body)
            if taken["counts"]["hosts"] != hosts:
                benchlib.fail(f"a snapshot counted {taken['counts']['hosts']} hosts, seeded {hosts}")
            first, size = first or taken["id"], taken["size_bytes"]
            rows["POST /api/snapshots"].append(elapsed)
        for _ in range(runs):
            started = time.perf_counter()
            elapsed, body = client.timed("POST", f"/api/snapshots/{first}/restore", None, 200)
            if json.loads(body)["after"]["hosts"] != hosts:
                benchlib.fail(f"a restore answered {body[:200]}")
            rows["POST /api/snapshots/:id/restore"].append(elapsed)
            _, page = client.timed("GET", "/api/hosts?per_page=1")
            if json.loads(page)["total"] != hosts:
                benchlib.fail(f"the list after a restore: {page[:200]}")
            rows["restore, then the list answers"].append((time.perf_counter() - started) * 1000)
        client.close()
    database = os.path.getsize(os.path.join(data_dir, "host-manager.db"))
    benchlib.forget(folder)
    print(f"scripts/bench snapshots {hosts} --runs {runs}: {hosts:,} hosts; load average "
          f"{benchlib.loadavg()} at start (2 cores, shared); {benchlib.cpu_model()}")
    print(note)
    print(f"snapshot file: {size / 1e6:.1f} MB (database file {database / 1e6:.1f} MB)")
    print("| request | median ms | max ms |")
    print("|---|---|---|")
    for label, times in rows.items():
        print(f"| {label} | {median(times):.1f} | {max(times):.1f} |")
    print(f"\ncommand: {benchlib.command_line()}")
