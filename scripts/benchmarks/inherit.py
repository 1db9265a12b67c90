"""inherit: what inheritance costs on a large catalogue (docs/identities.md).

Seeds a catalogue of HOSTS hosts (benchmarks/seed.py, 200 groups in five levels), then, with
the service stopped, gives every group a default port and each top-level group a default
username (so every group below inherits it), and makes every second grouped host inherit both (its own username and port set to NULL). On the service it times,
RUNS times each: the list filtered by an effective username (`?username=`, answered by SQL
and the groups' resolution, not the list's memory) beside the same page filtered by a tag
(the memory's own set); one inheriting host's effective view; `connect` of one; and a change
of a top-level group's default username, which every inheriting host below it follows (its
`affected_hosts` is printed). Prints medians and maxima.

Invariants: the catalogue, the service and their folder are removed whatever happens; every
answer is checked (a count, a source, a value), so a figure never times a refusal.
"""

import json
import os
import sqlite3

import benchlib
from benchlib import Client, median
from benchmarks import seed


def add_options(parser):
    parser.add_argument("--runs", type=int, default=20, help="requests of each kind (default 20)")


def run(args, profile, smoke=False):
    hosts, runs = args.hosts, args.runs
    binary = benchlib.build(profile)
    folder = benchlib.scratch("hm-bench-inherit-")
    data_dir = os.path.join(folder, "data")
    group_ids, note = seed.catalogue(binary, data_dir, hosts, groups=200, keys=2)
    inheriting, tops = _inherit(data_dir)
    rows = {"GET /api/hosts?username=<a group default>, page of 50": [],
            "GET /api/hosts?tag=<a tag>, page of 50 (the list's memory)": [],
            "GET /api/hosts/:id/effective, an inheriting host": [],
            "POST /api/hosts/:id/connect, an inheriting host": [],
            "PUT /api/groups/:id defaults.username, a top-level group": []}
    followed = []
    with benchlib.Service(binary, data_dir=data_dir) as service:
        client = Client(service.port, timeout=120)
        client.timed("GET", "/api/hosts?per_page=1")
        # The top-level groups with inheriting hosts below them (a small catalogue has some
        # without), and the username each gives.
        tops = [(top, username) for top, username in tops
                if json.loads(client.timed("GET", f"/api/hosts?username={username}&per_page=1")[1])["total"]]
        if not tops:
            benchlib.fail("no host inherits a top-level group's username")
        for index in range(runs):
            top, username = tops[index % len(tops)]
            elapsed, data = client.timed("GET", f"/api/hosts?username={username}&per_page=50")
            if not json.loads(data)["total"]:
                benchlib.fail(f"no host has the effective username {username}")
            rows["GET /api/hosts?username=<a group default>, page of 50"].append(elapsed)
            elapsed, data = client.timed("GET", f"/api/hosts?tag=team-{index % 40:02d}&per_page=50")
            rows["GET /api/hosts?tag=<a tag>, page of 50 (the list's memory)"].append(elapsed)
            host = inheriting[index % len(inheriting)]
            elapsed, data = client.timed("GET", f"/api/hosts/{host}/effective")
            if not json.loads(data)["fields"]["username"]["source"].startswith("group:"):
                benchlib.fail(f"host {host} does not inherit its username")
            rows["GET /api/hosts/:id/effective, an inheriting host"].append(elapsed)
            elapsed, _ = client.timed("POST", f"/api/hosts/{host}/connect", {})
            rows["POST /api/hosts/:id/connect, an inheriting host"].append(elapsed)
            elapsed, data = client.timed("PUT", f"/api/groups/{top}", {"defaults": {"username": f"rotated-{index}"}})
            followed.append(json.loads(data)["affected_hosts"])
            if not followed[-1]:
                benchlib.fail(f"no host followed the default of group {top}")
            # Back, untimed, so the next filter on this group's username finds its hosts.
            client.timed("PUT", f"/api/groups/{top}", {"defaults": {"username": username}})
            rows["PUT /api/groups/:id defaults.username, a top-level group"].append(elapsed)
        client.close()
    benchlib.forget(folder)
    print(f"scripts/bench inherit {hosts} --runs {runs}: {hosts:,} hosts, {len(group_ids)} groups, half of the "
          f"grouped hosts inheriting username and port; load average {benchlib.loadavg()} at start "
          f"(2 cores, shared); {benchlib.cpu_model()}")
    print(note)
    print("| request | median ms | max ms |")
    print("|---|---|---|")
    for label, times in rows.items():
        print(f"| {label} | {median(times):.2f} | {max(times):.2f} |")
    print(f"\nhosts that followed one top-level group's new default: median {median(followed):,.0f}")
    print(f"command: {benchlib.command_line()}")


def _inherit(data_dir):
    """A default port for every group and a username for the top-level ones, every second
    grouped host inheriting both; the ids of up to
    100 inheriting hosts and of the top-level groups. The service is stopped."""
    db = sqlite3.connect(os.path.join(data_dir, "host-manager.db"), isolation_level=None)
    try:
        db.execute("BEGIN")
        db.execute("UPDATE groups SET default_port = 2200")
        db.execute("UPDATE groups SET default_username = 'user-' || rowid WHERE parent_id IS NULL")
        db.execute("UPDATE hosts SET username = NULL, port = NULL WHERE group_id IS NOT NULL AND seq % 2 = 0")
        db.execute("COMMIT")
        inheriting = [row[0] for row in db.execute("SELECT id FROM hosts WHERE username IS NULL LIMIT 100")]
        tops = [(row[0], row[1]) for row in
                db.execute("SELECT id, default_username FROM groups WHERE parent_id IS NULL")]
    finally:
        db.close()
    if not inheriting or not tops:
        benchlib.fail("the seeded catalogue has no grouped host or no top-level group")
    return inheriting, tops
