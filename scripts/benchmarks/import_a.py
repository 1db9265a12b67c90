"""Import generators for the csv, termius-csv and remmina formats (docs/import-formats.md).

`generate(fmt, count, secrets)` returns the files a user would send to
`POST /api/import/<fmt>`: `count` SSH sessions spread over about 20 nested folders (three
levels: region / role / tier), with realistic names, host names, ports, users, tags and
notes, and one jump host per region that the other sessions of that region go through.
With `secrets`, every session carries a saved password in the source's own form: clear text
in the CSVs, 3DES with `remmina.pref`'s secret for Remmina (one `.remmina` file per session,
plus `remmina.pref`; Remmina's scheme has no per-value salt, so every value shares that key).

Python stdlib and `cryptography` only (TripleDES from its `decrepit` module).
"""

import base64
import csv
import io
import random

REGIONS = ["eu-west", "eu-central", "us-east", "us-west", "ap-south"]
ROLES = ["web", "db", "cache", "queue"]
TIERS = ["prod", "staging"]
USERS = ["deploy", "ops", "root", "postgres", "ubuntu", "admin"]


def _folders():
    """About 20 folder paths: region/role, some with a tier below."""
    paths = []
    for region in REGIONS:
        for role in ROLES:
            paths.append([region, role] + ([TIERS[len(paths) % 2]] if len(paths) % 3 == 0 else []))
    return paths


def _sessions(count, seed=4180):
    """`count` session dicts, the first of each region being its jump host."""
    rng = random.Random(seed)
    folders = _folders()
    sessions = []
    for index in range(count):
        path = folders[index % len(folders)]
        region = path[0]
        is_jump = index < len(REGIONS)
        if is_jump:
            path = [REGIONS[index]]
            region = REGIONS[index]
        name = f"bastion {region}" if is_jump else f"{path[1]}-{index:05d}"
        sessions.append({
            "name": name,
            "group": path,
            "hostname": f"{name.replace(' ', '-')}.{region}.example.net",
            "port": 22 if is_jump or rng.random() < 0.8 else rng.choice([2022, 2222, 8022]),
            "username": "jump" if is_jump else rng.choice(USERS),
            "tags": [region, path[1]] if not is_jump else [region, "bastion"],
            "notes": "" if rng.random() < 0.7 else f"Ticket OPS-{rng.randint(1000, 9999)}, owner: team {path[-1]}",
            "password": f"pw-{index}-{rng.getrandbits(48):012x}",
            "jump": None if is_jump else f"bastion {region}",
        })
    return sessions


def _csv_text(header, rows):
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode("utf-8")


def _ours(sessions, secrets):
    header = ["name", "hostname", "port", "username", "auth", "password", "group_path", "tags", "notes", "proxy_jump"]
    rows = [[
        s["name"], s["hostname"], str(s["port"]), s["username"], "password" if secrets else "agent",
        s["password"] if secrets else "", "/".join(s["group"]), ";".join(s["tags"]), s["notes"],
        s["jump"] or "",
    ] for s in sessions]
    return [("hosts.csv", _csv_text(header, rows))]


def _termius(sessions, secrets):
    header = ["Groups", "Label", "Tags", "Hostname/IP", "Protocol", "Port", "Username", "Password"]
    rows = [[
        "/".join(s["group"]), s["name"], ",".join(s["tags"]), s["hostname"], "ssh", str(s["port"]),
        s["username"], s["password"] if secrets else "",
    ] for s in sessions]
    return [("termius.csv", _csv_text(header, rows))]


def _remmina_encrypt(password, secret):
    from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
    from cryptography.hazmat.primitives.ciphers import Cipher, modes

    data = password.encode("utf-8")
    data += b"\0" * (8 - len(data) % 8)
    encryptor = Cipher(TripleDES(secret[:24]), modes.CBC(secret[24:32])).encryptor()
    return base64.b64encode(encryptor.update(data) + encryptor.finalize()).decode()


def _remmina(sessions, secrets):
    secret = bytes(random.Random(7).getrandbits(8) for _ in range(32))
    files = [("remmina.pref", (
        "[remmina_pref]\nsave_view_mode=true\nremmina_file_name=%G_%P_%N_%h\n"
        f"secret={base64.b64encode(secret).decode()}\nrecent_maximum=10\n"
    ).encode())]
    by_name = {s["name"]: s for s in sessions}
    for index, s in enumerate(sessions):
        jump = by_name.get(s["jump"]) if s["jump"] else None
        settings = {
            "name": s["name"], "group": "/".join(s["group"]), "protocol": "SSH",
            "server": s["hostname"] if s["port"] == 22 else f"{s['hostname']}:{s['port']}",
            "username": s["username"], "ssh_auth": "0" if secrets else "2",
            "password": _remmina_encrypt(s["password"], secret) if secrets else "",
            "labels": ",".join(s["tags"]), "notes_text": "", "precommand": "", "postcommand": "",
            "disablepasswordstoring": "0", "ssh_privatekey": "", "ssh_certfile": "",
            "ssh_passphrase": "", "ssh_color_scheme": "0", "ssh_charset": "", "ssh_proxycommand": "",
            "ssh_kex_algorithms": "", "ssh_ciphers": "", "ssh_hostkeytypes": "", "ssh_compression": "0",
            "ssh_stricthostkeycheck": "0", "ssh_forward_x11": "0", "exec": "", "run_line": "",
            "ssh_tunnel_enabled": "1" if jump else "0",
            "ssh_tunnel_server": f"{jump['hostname']}:{jump['port']}" if jump else "",
            "ssh_tunnel_username": jump["username"] if jump else "", "ssh_tunnel_auth": "2",
            "ssh_tunnel_password": "", "ssh_tunnel_privatekey": "", "ssh_tunnel_passphrase": "",
            "ssh_tunnel_loopback": "0", "window_width": "640", "window_height": "480",
            "window_maximize": "0", "viewmode": "1",
        }
        text = "[remmina]\n" + "".join(f"{key}={value}\n" for key, value in settings.items())
        files.append((f"{1700000000000 + index}.remmina", text.encode("utf-8")))
    return files


def generate(fmt: str, count: int, secrets: bool) -> list[tuple[str, bytes]]:
    """The files of `count` sessions in format `fmt` (csv, termius-csv or remmina)."""
    sessions = _sessions(count)
    makers = {"csv": _ours, "termius-csv": _termius, "remmina": _remmina}
    if fmt not in makers:
        raise ValueError(f"import_a generates csv, termius-csv and remmina, not {fmt}")
    return makers[fmt](sessions, secrets)


if __name__ == "__main__":
    for fmt in ("csv", "termius-csv", "remmina"):
        files = generate(fmt, 100, True)
        print(fmt, len(files), "files", sum(len(body) for _, body in files), "bytes")
