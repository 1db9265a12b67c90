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

NAME = "keygen"
HELP = "POST /api/keys: generation of every type and size, and imports"
SMOKE = ["1"]
GENERATED = [
    ("generate ed25519", {"type": "ed25519"}),
    ("generate ecdsa 256", {"type": "ecdsa", "bits": 256}),
    ("generate ecdsa 384", {"type": "ecdsa", "bits": 384}),
    ("generate ecdsa 521", {"type": "ecdsa", "bits": 521}),
    ("generate rsa 2048", {"type": "rsa", "bits": 2048}),
    ("generate rsa 3072", {"type": "rsa", "bits": 3072}),
    ("generate rsa 4096", {"type": "rsa", "bits": 4096}),
    ("generate ed25519 + passphrase", {"type": "ed25519", "passphrase": "bench pass"}),
]


def add_arguments(parser):
    parser.add_argument("runs", nargs="?", type=int, default=5,
                        help="requests per row (default 5; RSA-4096 alone takes seconds per run)")


def run(args, profile, smoke=False):
    runs = args.runs
    benchlib.need("ssh-keygen", "openssh-client")
    folder = benchlib.scratch()
    # Smoke: the slow RSA generations (seconds each) only at their smallest size.
    generated = [row for row in GENERATED if not (smoke and row[0] in ("generate rsa 3072", "generate rsa 4096"))]
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
