"""batch: POST /api/hosts/batch on a large catalogue (docs/api.md, Hosts, "Batch").

Seeds a catalogue of HOSTS hosts (benchmarks/seed.py), starts the service on it, reads the
list once (so its memory is warm), then per run retags and moves BATCH hosts by ids in one
request (`tags: {add, remove}` and `group_id`), and times: the batch; the next
`GET /api/hosts?tag=<the new tag>` (the list's memory patched from the batch's writes; the
answer's `total` is checked to be BATCH); a dry run of the same ops; and a batch by filter
(`filter: {tag}`) that sets a colour. Each run takes other hosts and another group. Prints
medians and maxima.

Invariants: the catalogue, the service and their folder are removed whatever happens; every
answer's count is checked, so a figure never times a refusal.
"""

import json
import os
import sqlite3

import benchlib
from benchlib import Client, median
from benchmarks import seed


def add_options(parser):
    parser.add_argument("--runs", type=int, default=5, help="batches of each kind (default 5)")


def run(args, profile, smoke=False):
    hosts, size, runs = args.hosts, args.batch, args.runs
    if size * runs > hosts:
        benchlib.fail(f"{runs} runs of {size} hosts need at least {size * runs} hosts")
    binary = benchlib.build(profile)
    folder = benchlib.scratch("hm-bench-batch-")
    data_dir = os.path.join(folder, "data")
    group_ids, note = seed.catalogue(binary, data_dir, hosts, groups=200, keys=2)
    ids = _ids(data_dir)
    rows = {"batch by ids: retag + move": [], "GET /api/hosts?tag=<new> after it": [],
            "dry run of the same ops": [], "batch by filter {tag}: colour": []}
    with benchlib.Service(binary, data_dir=data_dir) as service:
        client = Client(service.port, timeout=120)
        client.timed("GET", "/api/hosts?per_page=1")
        for run_index in range(runs):
            chosen = ids[run_index * size:(run_index + 1) * size]
            body = {"ids": chosen, "ops": {"tags": {"add": [f"batch-{run_index}"], "remove": ["dev"]},
                                           "group_id": group_ids[run_index]}}
            elapsed, answer = _batch(client, dict(body, dry_run=True), size, "count")
            rows["dry run of the same ops"].append(elapsed)
            elapsed, answer = _batch(client, body, size, "count")
            rows["batch by ids: retag + move"].append(elapsed)
            elapsed, page = client.timed("GET", f"/api/hosts?tag=batch-{run_index}&per_page=50")
            total = json.loads(page)["total"]
            if total != size:
                benchlib.fail(f"the list shows {total} hosts tagged batch-{run_index}, the batch wrote {size}")
            rows["GET /api/hosts?tag=<new> after it"].append(elapsed)
            body = {"filter": {"tag": f"team-{run_index:02d}"}, "ops": {"color": f"#00000{run_index % 10}"}}
            elapsed, _ = _batch(client, body, None, "matched")
            rows["batch by filter {tag}: colour"].append(elapsed)
            client.timed("GET", "/api/hosts?per_page=1")  # untimed: the next GET times one batch only
        client.close()
    benchlib.forget(folder)
    print(f"scripts/bench batch {hosts} {size} --runs {runs}: {hosts:,} hosts, batches of {size:,}; "
          f"load average {benchlib.loadavg()} at start (2 cores, shared); {benchlib.cpu_model()}")
    print(note)
    print("| request | median ms | max ms |")
    print("|---|---|---|")
    for label, times in rows.items():
        print(f"| {label} | {median(times):.1f} | {max(times):.1f} |")
    print(f"\ncommand: {benchlib.command_line()}")


def _ids(data_dir):
    """Every host id in `seq` order, read while the service is stopped."""
    db = sqlite3.connect(os.path.join(data_dir, "host-manager.db"))
    try:
        return [row[0] for row in db.execute("SELECT id FROM hosts ORDER BY seq")]
    finally:
        db.close()


def _batch(client, body, expected, field):
    """POST /api/hosts/batch; its `field` must be `expected` (any positive count if None)."""
    elapsed, data = client.timed("POST", "/api/hosts/batch", body)
    answer = json.loads(data)
    if (expected is None and not answer[field]) or (expected is not None and answer[field] != expected):
        benchlib.fail(f"the batch answered {field} {answer[field]}, expected {expected or 'some'}")
    return elapsed, answer
