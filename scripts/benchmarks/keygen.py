"""keygen: key generation and import over HTTP, the time of one POST /api/keys for every type
and size the service generates, and for imports (plain, encrypted with and without its
passphrase: the bcrypt-pbkdf cost), on a fresh data dir.

Invariants: every key made is deleted before the next (names never collide); the service is
stopped and its data dir and the ssh-keygen files removed whatever happens.
"""

import json
import os
import subprocess
import tempfile

import benchlib
from benchlib import Client, median
from benchmarks import seed


def run(args, profile, smoke=False):
    runs = args.runs
    benchlib.need("ssh-keygen", "openssh-client")
    folder = benchlib.scratch()
    # Smoke: the slow RSA generations (seconds each) only at their smallest size.
    generated = [(f"generate {label}", body) for label, body in seed.KEY_TYPES
                 if not (smoke and label in ("rsa 3072", "rsa 4096"))]
    with benchlib.Service(benchlib.build(profile)) as service:
        client = Client(service.port, timeout=300)

        def timed(label, body, expect=201):
            times = []
            for n in range(runs):
                elapsed, reply = client.timed("POST", "/api/keys", dict(body, name=f"{label} {n}"), expect)
                times.append(elapsed)
                if expect == 201:
                    client.timed("DELETE", f"/api/keys/{json.loads(reply)['id']}", expect=204)
            return label, times

        rows = [("GET /api/health (baseline)", [client.timed("GET", "/api/health")[0] for _ in range(50)])]
        rows += [timed(label, body) for label, body in generated]
        plain = _keygen(folder, ["-t", "ed25519"], "")
        encrypted = _keygen(folder, ["-t", "ed25519"], "bench pass")
        rows.append(timed("import ed25519, plain", {"private_key": plain}))
        rows.append(timed("import ed25519, encrypted, no passphrase", {"private_key": encrypted}))
        rows.append(timed("import ed25519, encrypted + passphrase (bcrypt 16 rounds)",
                          {"private_key": encrypted, "passphrase": "bench pass"}))
        rows.append(timed("import ed25519, encrypted + wrong passphrase",
                          {"private_key": encrypted, "passphrase": "wrong"}, expect=400))
    width = max(len(label) for label, _ in rows)
    print(f"POST /api/keys over HTTP, {profile} build, {runs} runs per row (health: 50), ms:")
    print(f"  {'operation':<{width}}  {'median':>9}  {'min':>9}  {'max':>9}")
    for label, times in rows:
        print(f"  {label:<{width}}  {median(times):9.1f}  {min(times):9.1f}  {max(times):9.1f}")
    print(f"  command: {benchlib.command_line()}")


def _keygen(folder, args, passphrase):
    path = os.path.join(tempfile.mkdtemp(dir=folder), "id")
    subprocess.run(["ssh-keygen", "-q", "-f", path, "-N", passphrase, "-C", "bench"] + args, check=True)
    with open(path) as key:
        return key.read()
