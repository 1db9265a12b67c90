#!/usr/bin/env python3
"""Writes the WinSCP samples: vectors.txt (scrambled passwords with their key and plain
text, for the descrambler's unit tests) and WinSCP.ini / WinSCP-master.ini (realistic
WinSCP.ini files for the reader's tests).

An implementation of WinSCP's password scrambling written from its published description
(each byte written as two upper-case hex digits of ~(b ^ 0xA3); flag 0xFF, version 0x00 with
a one-byte length or 0x02 with a two-byte length, a random shift and that many random bytes,
then key + password, then random padding to 50 bytes), independent of the Rust code it
checks. Seeded, so running it again writes the same files.

    python3 tests/samples/import/winscp/make.py
"""

import os
import random
from urllib.parse import quote

HERE = os.path.dirname(os.path.abspath(__file__))
MAGIC = 0xA3
FLAG = 0xFF
MAXLEN = 50

rng = random.Random(20261128)


def char(b: int) -> str:
    return "%02X" % ((~b ^ MAGIC) & 0xFF)


def scramble(password: str, key: str, version: int | None = None) -> str:
    data = (key + password).encode("utf-8")
    out = char(FLAG)
    if version is None:
        version = 0x02 if len(data) > 255 else 0x00
    out += char(version)
    if version == 0x02:
        out += char(len(data) >> 8) + char(len(data) & 0xFF)
    else:
        out += char(len(data))
    data_len = len(out) // 2 + 1 + len(data)
    shift = rng.randrange(MAXLEN - data_len) if data_len < MAXLEN else 0
    out += char(shift)
    out += "".join(char(rng.randrange(256)) for _ in range(shift))
    out += "".join(char(b) for b in data)
    while len(out) < MAXLEN * 2:
        out += char(rng.randrange(256))
    return out


def scramble_oldest(password: str) -> str:
    """The form without the flag: length, shift, junk, password (no key)."""
    data = password.encode("utf-8")
    shift = rng.randrange(10)
    out = char(len(data)) + char(shift)
    out += "".join(char(rng.randrange(256)) for _ in range(shift))
    out += "".join(char(b) for b in data)
    return out


def write_vectors() -> None:
    rows = [
        ("short", "deployweb1.example.com", "s3cret!"),
        ("empty password", "rootdb.example.com", ""),
        ("utf-8 key and password", "jos\u00e9caf\u00e9.example.com", "p\u00e4ss \u4e2d\u6587"),
        ("empty key", "", "no key at all"),
        ("long enough for no shift", "u" * 30 + "h" * 30, "x" * 40),
        ("two-byte length", "adminbig.example.com", "L" * 300),
    ]
    lines = ["# what\tkey\tpassword\tscrambled (written by make.py)"]
    for what, key, password in rows:
        lines.append("\t".join((what, key, password, scramble(password, key))))
    lines.append("\t".join(("oldest form without flag", "", "legacy", scramble_oldest("legacy"))))
    with open(os.path.join(HERE, "vectors.txt"), "w", encoding="utf-8", newline="\n") as out:
        out.write("\n".join(lines) + "\n")


def q(text: str) -> str:
    """WinSCP.ini escapes names and values as URL-encoded UTF-8."""
    return quote(text, safe="-_.!~*'()/:@")


def session(path: str, fields: list[tuple[str, str]]) -> str:
    name = "/".join(q(part).replace("/", "%2F") for part in path.split("/"))
    body = [f"[Sessions\\{name}]"]
    body += [f"{key}={value}" for key, value in fields]
    return "\r\n".join(body) + "\r\n\r\n"


def defaults() -> list[tuple[str, str]]:
    return [
        ("LocalDirectory", q("C:\\Users\\me\\Documents")),
        ("SynchronizeBrowsing", "0"),
        ("UpdateDirectories", "1"),
        ("Color", "0"),
    ]


PASSWORDS = {
    "web 1": "Web1-Pa55",
    "db-primary tunnel": "Jump!pass",
    "caf\u00e9": "caf\u00e9-secret",
}


def write_ini() -> None:
    text = "[Configuration\\Interface]\r\nRandomSeedFile=%25APPDATA%25%5Cwinscp.rnd\r\n" \
        "Theme=Light\r\nShowTips=0\r\n\r\n[Configuration\\Security]\r\nUseMasterPassword=0\r\n\r\n"
    text += session("Default Settings", [("UserName", "me"), ("FSProtocol", "2")])
    text += session("Prod/Web/web 1", [
        ("HostName", "web1.example.com"), ("PortNumber", "2222"), ("UserName", "deploy"),
        ("Password", scramble(PASSWORDS["web 1"], "deploy" + "web1.example.com")),
        ("FSProtocol", "2"), ("RemoteDirectory", "/var/www"), ("Note", q("front web, ask ops")),
    ] + defaults())
    text += session("Prod/Web/web 2", [
        ("HostName", "web2.example.com"), ("UserName", "deploy"),
        ("PublicKeyFile", q("C:\\Users\\me\\.ssh\\web.ppk")),
        ("DetachedCertificate", q("C:\\Users\\me\\.ssh\\web-cert.pub")),
        ("FSProtocol", "1"), ("Compression", "1"), ("AgentFwd", "1"),
    ] + defaults())
    text += session("Prod/DB/db-primary", [
        ("HostName", "10.0.0.5"), ("UserName", "postgres"), ("FSProtocol", "0"),
        ("Tunnel", "1"), ("TunnelHostName", "bastion.example.com"), ("TunnelPortNumber", "2022"),
        ("TunnelUserName", "jump"),
        ("TunnelPassword", scramble(PASSWORDS["db-primary tunnel"], "jump" + "bastion.example.com")),
        ("TunnelLocalPortNumber", "0"),
    ] + defaults())
    text += session("Prod/DB/db-replica", [
        ("HostName", "10.0.0.6"), ("UserName", "postgres"),
        ("Tunnel", "1"), ("TunnelHostName", "bastion.example.com"), ("TunnelPortNumber", "2022"),
        ("TunnelUserName", "jump"), ("TunnelPublicKeyFile", q("C:\\keys\\jump.ppk")),
        ("ProxyMethod", "2"), ("ProxyHost", "socks.example.com"), ("ProxyPort", "1080"),
    ] + defaults())
    text += session("Staging/ftp files", [
        ("HostName", "ftp.example.com"), ("UserName", "up"), ("FSProtocol", "5"),
        ("Ftps", "0"),
    ] + defaults())
    text += session("Staging/webdav", [("HostName", "dav.example.com"), ("FSProtocol", "6")])
    text += session("Staging/s3 bucket", [("HostName", "s3.amazonaws.com"), ("FSProtocol", "7")])
    text += session("Staging/app", [("HostName", "app.staging.example.com"), ("PortNumber", "22")])
    text += session("Caf\u00e9/\u670d\u52a1\u5668", [
        ("HostName", "cafe.example.com"), ("UserName", "jos\u00e9"),
        ("Password", scramble(PASSWORDS["caf\u00e9"], "jos\u00e9" + "cafe.example.com")),
    ])
    # The user was renamed after the password was saved: its key no longer matches.
    text += session("Staging/renamed", [
        ("HostName", "renamed.example.com"), ("UserName", "newname"),
        ("Password", scramble("Old-User-Pass", "oldname" + "renamed.example.com")),
    ])
    text += session("no host", [("UserName", "nobody"), ("FSProtocol", "2")])
    text += session("Workspace/0000", [("HostName", "web1.example.com"), ("IsWorkspace", "1")])
    text += "[SshHostKeys]\r\nssh-ed25519@22:web1.example.com=0x1234\r\n"
    with open(os.path.join(HERE, "WinSCP.ini"), "w", encoding="utf-8", newline="") as out:
        out.write(text)


def write_master() -> None:
    text = "[Configuration\\Security]\r\nUseMasterPassword=1\r\nMasterPasswordVerifier=" + \
        "".join(rng.choice("0123456789ABCDEF") for _ in range(64)) + "\r\n\r\n"
    kept = char(FLAG) + char(0x01) + "".join(rng.choice("0123456789ABCDEF") for _ in range(96))
    text += session("locked", [
        ("HostName", "locked.example.com"), ("UserName", "me"), ("Password", kept),
    ])
    with open(os.path.join(HERE, "WinSCP-master.ini"), "w", encoding="utf-8", newline="") as out:
        out.write(text)


if __name__ == "__main__":
    write_vectors()
    write_ini()
    write_master()
