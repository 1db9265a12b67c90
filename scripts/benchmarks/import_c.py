"""Bench inputs for the XML importers (`securecrt`, `mremoteng`): `generate(fmt, count,
secrets)` returns the files a user would send, `count` SSH sessions spread over 20 nested
folders (4 top folders of 4 subfolders each, sessions dealt round-robin), each session with
the many default settings a real export carries.

With `secrets`, every session saves a password in its source's protected form:
- mremoteng: AES-256-GCM under PBKDF2-HMAC-SHA1 with mRemoteNG's default password, a fresh
  salt per value and `KdfIterations` 10,000 (so the import derives once per session);
- securecrt: `Password V2` `02:` (AES-256-CBC, unsalted) for every session, except the first
  `IMPORT_C_SECURECRT_03` sessions (environment, default 0), which get the salted `03:` form.
  `03:` needs bcrypt_pbkdf, which Python's `cryptography` lacks: the pure-Python one of
  tests/samples/import/securecrt/make.py costs about 16 s per value on this machine, so a
  large `03:` set is generated once and kept, not per run.

The encoders and the export layout are those of the sample generators
(tests/samples/import/{securecrt,mremoteng}/make.py), loaded from there. Python stdlib and
`cryptography` only; deterministic for a (fmt, count, secrets).

Run alone: python3 scripts/benchmarks/import_c.py mremoteng 1000 secrets > /dev/null
"""

import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FOLDERS = [(top, sub) for top in ("Prod", "Staging", "Lab", "Clients")
           for sub in ("Web", "DB", "Cache", "Jump")]


def _maker(fmt):
    path = os.path.join(ROOT, "tests", "samples", "import", fmt, "make.py")
    spec = importlib.util.spec_from_file_location(f"make_{fmt}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _placement(count):
    """(folder index, session index) pairs in folder order."""
    per_folder = [[] for _ in FOLDERS]
    for index in range(count):
        per_folder[index % len(FOLDERS)].append(index)
    return per_folder


def _securecrt(count, secrets):
    make = _maker("securecrt")
    salted = int(os.environ.get("IMPORT_C_SECURECRT_03", "0"))
    per_folder = _placement(count)

    def host(index):
        extra = []
        if secrets:
            password = f"pw-{index:06d}"
            value = make.encrypt_03(password) if index < salted else make.encrypt_02(password)
            extra.append(("string", "Password V2", value))
        fields = make.ssh(f"10.{index >> 16 & 255}.{index >> 8 & 255}.{index & 255}",
                          f"user{index % 50}", 22 + index % 3, extra)
        return lambda i: make.session(f"host-{index:06d}", fields, i)

    tops = []
    for top in dict.fromkeys(name for name, _ in FOLDERS):
        subs = []
        for at, (name, sub) in enumerate(FOLDERS):
            if name == top:
                children = [host(index) for index in per_folder[at]]
                subs.append(lambda i, sub=sub, children=children: make.folder(sub, children, i))
        tops.append(lambda i, top=top, subs=subs: make.folder(top, subs, i))
    return [("sessions.xml", make.document(tops).encode("utf-8"))]


def _mremoteng(count, secrets):
    make = _maker("mremoteng")
    writer = make.Writer(make.DEFAULT_PASSWORD, 10000)
    per_folder = _placement(count)

    def connection(index):
        fields = make.ssh(Hostname=f"10.{index >> 16 & 255}.{index >> 8 & 255}.{index & 255}",
                          Username=f"user{index % 50}", Port=str(22 + index % 3))
        if secrets:
            fields["Password"] = f"pw-{index:06d}"
        return lambda i: writer.node("Connection", f"host-{index:06d}", i, **fields)

    tops = []
    for top in dict.fromkeys(name for name, _ in FOLDERS):
        subs = []
        for at, (name, sub) in enumerate(FOLDERS):
            if name == top:
                children = [connection(index) for index in per_folder[at]]
                subs.append(lambda i, sub=sub, children=children:
                            writer.node("Container", sub, i, children=children))
        tops.append(lambda i, top=top, subs=subs: writer.node("Container", top, i, children=subs))
    return [("confCons.xml", writer.document(tops, protected=False).encode("utf-8"))]


def generate(fmt: str, count: int, secrets: bool) -> list[tuple[str, bytes]]:
    """The files of a `count`-session export in format `fmt` (`securecrt` or `mremoteng`)."""
    if fmt == "securecrt":
        return _securecrt(count, secrets)
    if fmt == "mremoteng":
        return _mremoteng(count, secrets)
    raise ValueError(f"import_c generates securecrt and mremoteng, not {fmt}")


if __name__ == "__main__":
    files = generate(sys.argv[1], int(sys.argv[2]), len(sys.argv) > 3 and sys.argv[3] == "secrets")
    for name, data in files:
        print(f"{name}: {len(data)} bytes", file=sys.stderr)
        sys.stdout.buffer.write(data)
