"""scrub: what scrubbing removed secrets costs (docs/security.md, "The vault's threat model").

A write that deletes or replaces a sealed value is checkpointed (TRUNCATE) before its answer;
every other write only asks a one-row temp table whether it did. Times N requests of each
kind over one keep-alive connection, one at a time, on a fresh data dir, and prints medians
and p90s. Several binaries are measured one after the other (e.g. a baseline).

Invariants: each binary gets a fresh service and data dir, stopped and removed whatever
happens.
"""

import json
import os

import benchlib
from benchlib import Client, median


def add_options(parser):
    parser.add_argument("binaries", nargs="*",
                        help="binaries to measure one after the other (default: the one built here)")


def run(args, profile, smoke=False):
    count = args.count
    binaries = [os.path.abspath(binary) for binary in args.binaries] or [benchlib.build(profile)]
    print(f"scripts/bench scrub {count}: {count} requests of each kind, one at a time, one keep-alive "
          f"connection; load average {benchlib.loadavg()} at start (2 cores, shared)")
    for binary in binaries:
        print(f"\n{binary}")
        print("| request | median ms | p90 ms |")
        print("|---|---|---|")
        for label, times in _measure(binary, count).items():
            times.sort()
            print(f"| {label} | {median(times):.2f} | {times[max(0, int(len(times) * 0.9) - 1)]:.2f} |")
    print(f"\ncommand: {benchlib.command_line()}")


def _host(n, auth):
    return {"name": f"h{n}", "hostname": "example.org", "port": 22, "username": "u",
            "auth": auth, "notes": "x" * 200}


def _measure(binary, count):
    rows = {}
    with benchlib.Service(binary) as service:
        client = Client(service.port, timeout=30)
        made = {"password": [], "agent": []}

        def create(kind, n):
            auth = {"type": "password", "password": f"pw-{n}"} if kind == "password" else {"type": "agent"}
            elapsed, body = client.timed("POST", "/api/hosts", _host(n, auth), 201)
            made[kind].append(json.loads(body)["id"])
            return elapsed

        rows["GET /api/health (baseline)"] = [client.timed("GET", "/api/health")[0] for _ in range(count)]
        rows["POST /api/hosts with a password (ordinary)"] = [create("password", n) for n in range(count)]
        rows["POST /api/hosts, agent (ordinary)"] = [create("agent", n) for n in range(count)]
        ids = made["password"]
        rows["PUT /api/hosts/:id notes (ordinary)"] = [
            client.timed("PUT", f"/api/hosts/{i}", {"notes": "y" * 200})[0] for i in ids]
        rows["PUT /api/hosts/:id new password (scrubbed)"] = [
            client.timed("PUT", f"/api/hosts/{i}", {"auth": {"password": "changed"}})[0] for i in ids]
        rows["DELETE /api/hosts/:id, agent (ordinary)"] = [
            client.timed("DELETE", f"/api/hosts/{i}", expect=204)[0] for i in made["agent"]]
        rows["DELETE /api/hosts/:id with a password (scrubbed)"] = [
            client.timed("DELETE", f"/api/hosts/{i}", expect=204)[0] for i in ids]
    return rows
