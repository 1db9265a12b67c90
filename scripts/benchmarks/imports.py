"""imports: POST /api/import/{format} of SESSIONS generated sessions of each format.

For each format, on a fresh service: a dry run, the real import and a re-import (everything
unchanged), all with `secrets: skip`; then, on another fresh service, the real import with
`secrets: import` (every session has a saved password in its source's protected form), with
the share of that time spent in the source's own key derivation (the service logs how many
derivations an import ran, their time summed over the threads that ran them, and how many
threads). Times come from python3's http.client against
GET /api/health on the same connection; the file sets come from the generators beside this
file (import_a.py, import_b.py, import_c.py), which salt every password differently.

Invariants: the services are stopped and their data dirs removed whatever happens; a format
whose generator is missing is reported, not skipped silently.
"""

import base64
import json
import re

import benchlib
from benchlib import Client
from benchmarks import import_a, import_b, import_c

FORMATS = [
    ("mobaxterm", import_b), ("putty", import_b), ("winscp", import_b),
    ("securecrt", import_c), ("mremoteng", import_c),
    ("remmina", import_a), ("termius-csv", import_a), ("csv", import_a),
]

DERIVATIONS = re.compile(r"import (\S+): (\d+) items, (\d+) key derivations in (\d+) ms on (\d+) threads")


def add_options(parser):
    parser.add_argument("--formats", default=",".join(name for name, _ in FORMATS),
                        help="comma-separated formats to measure (default: all)")


def body(files, **extra):
    encoded = [{"name": name, "content_base64": base64.b64encode(data).decode()} for name, data in files]
    return json.dumps({"files": encoded, **extra}).encode()


def derivation_ms(service, fmt):
    """The key derivation time the service logged for its last import of `fmt`."""
    with open(service.stderr_path, encoding="utf-8", errors="replace") as log:
        found = [m for m in DERIVATIONS.finditer(log.read()) if m.group(1) == fmt]
    if not found:
        return 0, 0, 1
    last = found[-1]
    return int(last.group(3)), int(last.group(4)), max(1, int(last.group(5)))


def measure(binary, fmt, generator, sessions):
    plain = body(generator.generate(fmt, sessions, False))
    with benchlib.Service(binary) as service:
        client = Client(service.port)
        dry, data = client.timed("POST", f"/api/import/{fmt}", plain[:-1] + b', "dry_run": true}', raw=True)
        created = json.loads(data)["summary"]
        real, _ = client.timed("POST", f"/api/import/{fmt}", plain, raw=True)
        again, data = client.timed("POST", f"/api/import/{fmt}", plain, raw=True)
        unchanged = json.loads(data)["summary"]["unchanged"]
    secret = body(generator.generate(fmt, sessions, True), secrets="import")
    with benchlib.Service(binary) as service:
        client = Client(service.port)
        with_secrets, data = client.timed("POST", f"/api/import/{fmt}", secret, raw=True)
        imported = sum(1 for item in json.loads(data)["items"] if item["secret"] == "imported")
        derivations, derive_ms, threads = derivation_ms(service, fmt)
    # The derivations run on several threads: their summed time over the threads, against
    # the wall time of the request.
    share = f"{100 * derive_ms / threads / with_secrets:.0f} % ({threads} threads)" if with_secrets else "-"
    print(f"| {fmt} | {len(plain) / 1e6:.1f} MB | {created['created']} | {dry:.0f} | {real:.0f} | "
          f"{again:.0f} ({unchanged} unchanged) | {with_secrets:.0f} ({imported} passwords) | "
          f"{derivations} | {share} |")


def run(args, profile, smoke=False):
    sessions = args.sessions
    binary = benchlib.build(profile)
    wanted = args.formats.split(",")
    print(f"{sessions} sessions per format, times in ms")
    print("| format | body | hosts | dry run | import | re-import | import with secrets | "
          "key derivations | share in derivation |")
    print("|---|---|---|---|---|---|---|---|---|")
    for fmt, generator in FORMATS:
        if fmt in wanted:
            measure(binary, fmt, generator, sessions)
    print(f"command: {benchlib.command_line()}")
