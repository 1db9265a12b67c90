"""import_b: realistic file sets for the PuTTY, WinSCP and MobaXterm importers
(docs/import-formats.md), for the import benchmark.

`generate(fmt, count, secrets)` returns `[(file name, bytes)]` holding `count` sessions as
the tool itself writes them, spread over about 20 nested folders where the tool has folders:

  putty      one regedit export, UTF-16LE with a byte-order mark, every PuTTY default value
             in every session (PuTTY has no folders). With secrets, every session jumps
             through one of 20 SSH proxies by address with its ProxyPassword (kept in clear
             by PuTTY: its only saved password).
  winscp     one WinSCP.ini, sites in 20 folders three levels deep. With secrets, every site
             has a scrambled Password (a random shift and padding per value, as WinSCP does).
  mobaxterm  one export in Windows-1252, 20 [Bookmarks_N] folders three levels deep. With
             secrets, the portable MobaXterm.ini instead, with a [Passwords] entry per
             session (bound to the Windows user: never decoded, reported).

Python stdlib only; seeded, so a count gives the same files every run.
"""

import random
from urllib.parse import quote

FOLDERS = [f"Region {r}/Team {t}/{env}" for r in "AB" for t in range(1, 6)
           for env in ("prod", "staging")]


def _folder(index: int) -> str:
    return FOLDERS[index % len(FOLDERS)]


# WinSCP's scrambling: each byte as two upper-case hex digits of ~(b ^ 0xA3); flag 0xFF,
# version 0x00 and a one-byte length, a random shift and junk, key + password, padding.
def _char(b: int) -> str:
    return "%02X" % ((~b ^ 0xA3) & 0xFF)


def _scramble(rng: random.Random, password: str, key: str) -> str:
    data = (key + password).encode("utf-8")
    out = _char(0xFF) + _char(0x00) + _char(len(data))
    used = 4 + len(data)
    shift = rng.randrange(50 - used) if used < 50 else 0
    out += _char(shift) + "".join(_char(rng.randrange(256)) for _ in range(shift))
    out += "".join(_char(b) for b in data)
    while len(out) < 100:
        out += _char(rng.randrange(256))
    return out


_PUTTY_DEFAULTS = [
    ("Present", 1), ("LogFileName", "putty.log"), ("LogType", 0), ("Protocol", "ssh"),
    ("CloseOnExit", 1), ("WarnOnClose", 1), ("PingInterval", 0), ("PingIntervalSecs", 0),
    ("TCPNoDelay", 1), ("TCPKeepalives", 0), ("TerminalType", "xterm"),
    ("TerminalSpeed", "38400,38400"), ("AddressFamily", 0), ("ProxyExcludeList", ""),
    ("ProxyDNS", 1), ("ProxyLocalhost", 0), ("ProxyTelnetCommand", "connect %host %port\\n"),
    ("Environment", ""), ("GSSLibs", "gssapi32,sspi,custom"), ("UserNameFromEnvironment", 0),
    ("NoPTY", 0), ("Compression", 0), ("TryAgent", 1), ("AgentFwd", 0), ("GssapiFwd", 0),
    ("Cipher", "aes,chacha20,aesgcm,3des,WARN,des,blowfish,arcfour"),
    ("KEX", "ntru-curve25519,ecdh,dh-gex-sha1,dh-group18-sha512,dh-group14-sha1,WARN"),
    ("HostKey", "ed25519,ecdsa,rsa,dsa,WARN"), ("RekeyTime", 60), ("RekeyBytes", "1G"),
    ("SshNoAuth", 0), ("SshBanner", 1), ("AuthKI", 1), ("AuthGSSAPI", 1), ("SshNoShell", 0),
    ("SshProt", 3), ("DetachedCertificate", ""), ("RemoteCommand", ""),
    ("Font", "Courier New"), ("FontHeight", 10), ("Colour0", "187,187,187"),
    ("Colour1", "255,255,255"), ("Colour2", "0,0,0"), ("X11Forward", 0), ("X11Display", ""),
    ("LocalPortAcceptAll", 0), ("RemotePortAcceptAll", 0), ("SerialLine", "COM1"),
    ("SerialSpeed", 9600), ("WinTitle", ""),
]


def _reg(value) -> str:
    if isinstance(value, int):
        return "dword:%08x" % value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _putty(count: int, secrets: bool) -> list:
    root = "HKEY_CURRENT_USER\\Software\\SimonTatham\\PuTTY\\Sessions"
    lines = ["Windows Registry Editor Version 5.00", "", f"[{root}]", ""]
    for index in range(count):
        name = f"web {index:05d}".replace(" ", "%20")
        values = _PUTTY_DEFAULTS + [
            ("HostName", f"web{index}.example.com"), ("PortNumber", 22 + index % 3),
            ("UserName", f"user{index % 50}"), ("PublicKeyFile", ""),
            ("PortForwardings", f"L{10000 + index % 5000}=localhost:80" if index % 4 == 0 else ""),
        ]
        if secrets:
            values += [("ProxyMethod", 6), ("ProxyHost", f"jump{index % 20}.example.com"),
                       ("ProxyPort", 22), ("ProxyUsername", "jumper"),
                       ("ProxyPassword", f"proxy-pass-{index % 20}")]
        else:
            values += [("ProxyMethod", 0), ("ProxyHost", "proxy"), ("ProxyPort", 80),
                       ("ProxyUsername", ""), ("ProxyPassword", "")]
        lines.append(f"[{root}\\{name}]")
        lines += [f'"{key}"={_reg(value)}' for key, value in values]
        lines.append("")
    text = "\r\n".join(lines) + "\r\n"
    return [("sessions.reg", b"\xff\xfe" + text.encode("utf-16-le"))]


def _winscp(count: int, secrets: bool) -> list:
    rng = random.Random(count)
    parts = ["[Configuration\\Interface]\r\nTheme=Light\r\n\r\n"
             "[Configuration\\Security]\r\nUseMasterPassword=0\r\n\r\n"]
    for index in range(count):
        path = "/".join(quote(p) for p in f"{_folder(index)}/site {index:05d}".split("/"))
        host, user = f"site{index}.example.com", f"user{index % 50}"
        lines = [f"[Sessions\\{path}]", f"HostName={host}", f"PortNumber={22 + index % 3}",
                 f"UserName={user}", "FSProtocol=2", "LocalDirectory=C:%5CUsers%5Cme",
                 "RemoteDirectory=/var/www", "SynchronizeBrowsing=0", "Color=0"]
        if secrets:
            lines.append("Password=" + _scramble(rng, f"pass-{index}-{rng.randrange(10**6)}",
                                                 user + host))
        parts.append("\r\n".join(lines) + "\r\n\r\n")
    return [("WinSCP.ini", "".join(parts).encode("utf-8"))]


_MOBA_TAIL = ("#MobaFont%10%0%0%-1%15%236,236,236%30,30,30%180,180,192%0%-1%0%%xterm%-1%0%"
              "_Std_Colors_0_%80%24%0%1%-1%<none>%%0%0%-1%0%#0# #-1")


def _mobaxterm(count: int, secrets: bool) -> list:
    rng = random.Random(count)
    by_folder = {}
    for index in range(count):
        by_folder.setdefault(index % len(FOLDERS), []).append(index)
    lines = ["[Bookmarks]", "SubRep=", "ImgNum=42", ""]
    passwords = []
    for number, (folder, indexes) in enumerate(sorted(by_folder.items()), start=1):
        lines += [f"[Bookmarks_{number}]", "SubRep=" + _folder(folder).replace("/", "\\"),
                  "ImgNum=41"]
        for index in indexes:
            host, user = f"srv{index}.example.com", f"user{index % 50}"
            fields = ["0", host, str(22 + index % 3), user, "", "-1", "-1", "", "", "22", "",
                      "0", "0", "0", "", "", "-1", "0", "0", "0", "", "1080", "", "0", "0",
                      "1", "", "0", "", "", "", "0", "-1", "-1", "0"]
            lines.append(f"srv {index:05d}= #109#" + "%".join(fields) + _MOBA_TAIL)
            passwords.append(f"ssh22:{user}@{host}=" +
                             "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/")
                                     for _ in range(44)))
        lines.append("")
    if not secrets:
        return [("sessions.mxtsessions", ("\r\n".join(lines) + "\r\n").encode("cp1252"))]
    ini = ["[Misc]", "DarkMode=1", ""] + lines + ["[Passwords]"] + passwords + [""]
    return [("MobaXterm.ini", ("\r\n".join(ini) + "\r\n").encode("cp1252"))]


def generate(fmt: str, count: int, secrets: bool) -> list:
    """The files of `count` sessions of `fmt` (putty, winscp, mobaxterm)."""
    makers = {"putty": _putty, "winscp": _winscp, "mobaxterm": _mobaxterm}
    if fmt not in makers:
        raise ValueError(f"import_b has no format {fmt!r}")
    return makers[fmt](count, secrets)


if __name__ == "__main__":
    for fmt in ("putty", "winscp", "mobaxterm"):
        for secrets in (False, True):
            files = generate(fmt, 1000, secrets)
            print(fmt, secrets, [(name, len(data)) for name, data in files])
