"""interop: POST /api/import/ssh-config and GET /api/export/ssh-config over HTTP.

Times with python3's http.client, against GET /api/health on the same connection: the import
of a generated config of BLOCKS concrete Host blocks (every 10th with a ProxyJump through the
block before it, two kept directives each), the re-import of the same text (everything
unchanged), and the export of the whole catalogue. Then asks OpenSSH's `ssh -G` about the
last generated host (it has a ProxyJump).

Invariants: the body stays under the service's 1 MiB limit at the default size; the service
is stopped and its data dir and the exported file removed whatever happens.
"""

import json
import os
import subprocess

import benchlib
from benchlib import Client
from benchmarks import seed


def run(args, profile, smoke=False):
    blocks = args.blocks
    benchlib.need("ssh", "openssh-client")
    body = json.dumps({"config": seed.ssh_config(blocks)}).encode()
    exported = os.path.join(benchlib.scratch(), "exported.conf")
    with benchlib.Service(benchlib.build(profile)) as service:
        client = Client(service.port)
        health = min(client.timed("GET", "/api/health")[0] for _ in range(50))
        first, data = client.timed("POST", "/api/import/ssh-config", body, raw=True)
        answer = json.loads(data)
        again, data = client.timed("POST", "/api/import/ssh-config", body, raw=True)
        second = json.loads(data)
        exports = [client.timed("GET", "/api/export/ssh-config") for _ in range(5)]
    with open(exported, "wb") as out:
        out.write(exports[0][1])
    print(f"config: {blocks} Host blocks, {len(body)} bytes of JSON body")
    print(f"GET /api/health (best of 50): {health:.2f} ms")
    print(f"import (all created: {len(answer['created'])}): {first:.0f} ms")
    print(f"re-import (unchanged: {len(second['unchanged'])}, created: {len(second['created'])}): {again:.0f} ms")
    print(f"export ({len(exports[0][1])} bytes, best of 5): {min(e[0] for e in exports):.0f} ms")
    last = f"node-{blocks - 1}"
    print(f"ssh -G -F exported.conf {last}:")
    resolved = subprocess.run(["ssh", "-G", "-F", exported, last], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL).stdout
    for line in resolved.splitlines():
        if line.split(" ", 1)[0] in ("hostname", "port", "user", "proxyjump"):
            print(line)
    print(f"command: {benchlib.command_line()}")
