"""known-hosts: the host-key store at scale over HTTP (docs/api.md, "Host keys (known_hosts)").

Imports HOSTS concrete hosts through POST /api/import/ssh-config, then ENTRIES known_hosts
lines of which half are hashed (`|1|salt|hash`, as `ssh-keygen -H` writes, computed here with
python3's hmac) and half plain, every one naming a catalogue host. Times with python3's
http.client on one keep-alive connection, next to GET /api/health: the import, verify of a
host whose key is stored hashed (every hashed entry is one HMAC), the list (host_ids: one HMAC
per hashed entry and catalogue host), and both exports.

Invariants: the service is stopped and its data dir and the ssh-keygen key removed whatever
happens.
"""

import base64
import hashlib
import hmac
import os
import subprocess
import time

import benchlib
from benchlib import Client, median
from benchmarks import seed


def run(args, profile, smoke=False):
    hosts, entries = args.hosts, args.entries
    benchlib.need("ssh-keygen", "openssh-client")
    key_file = os.path.join(benchlib.scratch(), "key")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", key_file], check=True)
    with open(key_file + ".pub") as public:
        key = " ".join(public.read().split()[:2])
    name = lambda n: f"node-{n}.example.com"
    with benchlib.Service(benchlib.build(profile)) as service:
        client = Client(service.port)

        def median_ms(method, path, payload=None, runs=20):
            return median(client.timed(method, path, payload)[0] for _ in range(runs))

        config = seed.ssh_config(hosts, alias=lambda n: f"n{n}", hostname=name, user="u", options=False)
        client.timed("POST", "/api/import/ssh-config", {"config": config})
        text = "".join(f"{_hashed(name(n % hosts)) if n % 2 == 0 else name(n % hosts)} {key}\n"
                       for n in range(entries))
        started = time.perf_counter()
        report = client.json("POST", "/api/import/known-hosts", {"text": text})
        imported = (time.perf_counter() - started) * 1000
        if report["added"] != entries:
            benchlib.fail(f"the import added {report['added']} of {entries}: {report['refused'][:3]}")
        health = median_ms("GET", "/api/health", runs=50)
        hashed_host = {"hostname": name(0), "public_key": key}
        verdict = client.json("POST", "/api/known-hosts/verify", hashed_host)
        if verdict["status"] != "trusted":
            benchlib.fail(f"verify: {verdict}")
        verify = median_ms("POST", "/api/known-hosts/verify", hashed_host)
        # The largest page the list gives (docs/api.md: paged as GET /api/hosts).
        first_page = "/api/known-hosts?per_page=1000"
        listed = client.json("GET", first_page)
        linked = sum(1 for item in listed["items"] if item["host_ids"])
        list_ms = median_ms("GET", first_page, runs=5)
        export = median_ms("GET", "/api/export/known-hosts", runs=5)
        export_hashed = median_ms("GET", "/api/export/known-hosts?hashed=true", runs=5)
    print(f"catalogue: {hosts} hosts; known_hosts: {entries} entries ({(entries + 1) // 2} hashed), "
          f"{len(text)} bytes")
    print(f"GET /api/health (median of 50): {health:.2f} ms")
    print(f"import: {imported:.0f} ms")
    print(f"verify of a host stored hashed (median of 20): {verify:.2f} ms")
    print(f"list, a page of {len(listed['items'])} of {listed['total']} with host_ids "
          f"({linked} linked, median of 5): {list_ms:.0f} ms")
    print(f"export plain / hashed (median of 5): {export:.1f} / {export_hashed:.1f} ms")
    print(f"command: {benchlib.command_line()}")


def _hashed(host):
    """`host` as `ssh-keygen -H` writes it: |1|salt|HMAC-SHA1(salt, host), base64."""
    salt = os.urandom(20)
    digest = hmac.new(salt, host.encode(), hashlib.sha1).digest()
    return f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"
