#!/usr/bin/env python3
"""Writes the PuTTY samples as PuTTY writes them: sessions.reg (a regedit export of
HKEY_CURRENT_USER\\Software\\SimonTatham\\PuTTY\\Sessions: UTF-16LE with a byte-order mark,
CRLF), regedit4.reg (the older ANSI form, Windows-1252), and unix/<escaped name> files as
~/.putty/sessions/ holds them. Session names are %XX-escaped by PuTTY's rule for each platform
(Windows: space, backslash, *, ?, %, bytes outside ' '..'~' of the ANSI code page and a
leading '.'; Unix: everything but A-Z a-z 0-9 + - . @ _). Every session carries PuTTY's
default fields, as a real export does.

    python3 tests/samples/import/putty/make.py
"""

import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = "HKEY_CURRENT_USER\\Software\\SimonTatham\\PuTTY\\Sessions"

DEFAULTS = [
    ("Present", 1), ("HostName", ""), ("LogFileName", "putty.log"), ("LogType", 0),
    ("LogFileClash", 0xFFFFFFFF), ("LogFlush", 1), ("SSHLogOmitPasswords", 1),
    ("Protocol", "ssh"), ("PortNumber", 22), ("CloseOnExit", 1), ("WarnOnClose", 1),
    ("PingInterval", 0), ("PingIntervalSecs", 0), ("TCPNoDelay", 1), ("TCPKeepalives", 0),
    ("TerminalType", "xterm"), ("TerminalSpeed", "38400,38400"),
    ("TerminalModes", "CS7=A,CS8=A,DISCARD=A,DSUSP=A,ECHO=A,ECHOCTL=A"),
    ("AddressFamily", 0), ("ProxyExcludeList", ""), ("ProxyDNS", 1), ("ProxyLocalhost", 0),
    ("ProxyMethod", 0), ("ProxyHost", "proxy"), ("ProxyPort", 80), ("ProxyUsername", ""),
    ("ProxyPassword", ""), ("ProxyTelnetCommand", "connect %host %port\\n"),
    ("ProxyLogToTerm", 1), ("Environment", ""), ("UserName", ""),
    ("GSSLibs", "gssapi32,sspi,custom"), ("GSSCustom", ""), ("UserNameFromEnvironment", 0),
    ("LocalUserName", ""), ("NoPTY", 0), ("Compression", 0), ("TryAgent", 1), ("AgentFwd", 0),
    ("GssapiFwd", 0), ("ChangeUsername", 0),
    ("Cipher", "aes,chacha20,aesgcm,3des,WARN,des,blowfish,arcfour"),
    ("KEX", "ntru-curve25519,ecdh,dh-gex-sha1,dh-group18-sha512,dh-group14-sha1,WARN"),
    ("HostKey", "ed25519,ecdsa,rsa,dsa,WARN"), ("RekeyTime", 60), ("RekeyBytes", "1G"),
    ("SshNoAuth", 0), ("SshBanner", 1), ("AuthTIS", 0), ("AuthKI", 1), ("AuthGSSAPI", 1),
    ("SshNoShell", 0), ("SshProt", 3), ("LogHost", ""), ("SSH2DES", 0),
    ("PublicKeyFile", ""), ("DetachedCertificate", ""), ("AuthPlugin", ""),
    ("RemoteCommand", ""), ("RFCEnviron", 0), ("PassiveTelnet", 0), ("BackspaceIsDelete", 1),
    ("Font", "Courier New"), ("FontHeight", 10), ("Colour0", "187,187,187"),
    ("Colour1", "255,255,255"), ("Colour2", "0,0,0"), ("X11Forward", 0),
    ("X11Display", ""), ("X11AuthType", 1), ("X11AuthFile", ""), ("LocalPortAcceptAll", 0),
    ("RemotePortAcceptAll", 0), ("PortForwardings", ""), ("BugIgnore1", 0),
    ("SerialLine", "COM1"), ("SerialSpeed", 9600), ("WinTitle", ""),
]

SESSIONS = [
    ("Default Settings", {}),
    ("bastion", {
        "HostName": "bastion.example.com", "UserName": "ops",
        "PublicKeyFile": "C:\\Users\\me\\.ssh\\ops.ppk", "AgentFwd": 1,
    }),
    ("web server", {
        "HostName": "deploy@web.example.com", "PortNumber": 2222, "UserName": "ignored",
        "ProxyMethod": 6, "ProxyHost": "bastion", "ProxyPort": 22,
        "PortForwardings": "L8080=localhost:80,R2222=localhost:22,D1080,"
                           "4L127.0.0.1:9000=db.internal:5432",
        "Environment": "LANG=en_US.UTF-8,EDITOR=vim,EQ=a\\=b\\,c",
        "RemoteCommand": "tmux new -A -s main", "X11Forward": 1, "Compression": 1,
        "DetachedCertificate": "C:\\Users\\me\\.ssh\\web-cert.pub",
    }),
    ("db \\ prod", {
        "HostName": "db.internal", "UserName": "postgres",
        "ProxyMethod": 6, "ProxyHost": "jump.example.com", "ProxyPort": 2022,
        "ProxyUsername": "jumper", "ProxyPassword": "Jump-Secret-1",
    }),
    ("router", {"HostName": "192.168.1.1", "Protocol": "telnet", "PortNumber": 23}),
    ("serial console", {"Protocol": "serial", "SerialLine": "COM3", "SerialSpeed": 115200}),
    ("socks via", {
        "HostName": "inner.example.com", "ProxyMethod": 2, "ProxyHost": "socks.example.com",
        "ProxyPort": 1080,
    }),
    ("Caf\u00e9 *", {"HostName": "cafe.example.com", "UserName": "jos\u00e9"}),
    ("empty host", {"UserName": "nobody"}),
    (".dotted", {
        "HostName": "dot.example.com", "PingIntervalSecs": 30,
        "RemoteCommand": "echo \"quoted\" C:\\tmp",
    }),
]


def escape_windows(name: str) -> str:
    out = []
    for index, byte in enumerate(name.encode("cp1252")):
        ch = chr(byte)
        if ch in " \\*?%" or byte < 0x20 or byte > 0x7E or (ch == "." and index == 0):
            out.append("%%%02X" % byte)
        else:
            out.append(ch)
    return "".join(out)


def escape_unix(name: str) -> str:
    safe = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-.@_")
    return "".join(ch if ch in safe else "%%%02X" % b
                   for b in name.encode("utf-8") for ch in [chr(b)])


def fields(overrides: dict) -> list:
    out = [(key, overrides.get(key, value)) for key, value in DEFAULTS]
    out += [(key, value) for key, value in overrides.items() if key not in dict(DEFAULTS)]
    return out


def reg_value(value) -> str:
    if isinstance(value, int):
        return "dword:%08x" % value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def reg_text(header: str) -> str:
    lines = [header, "", f"[{ROOT}]", ""]
    for name, overrides in SESSIONS:
        lines.append(f"[{ROOT}\\{escape_windows(name)}]")
        lines += [f'"{key}"={reg_value(value)}' for key, value in fields(overrides)]
        lines.append("")
    return "\r\n".join(lines) + "\r\n"


def main() -> None:
    with open(os.path.join(HERE, "sessions.reg"), "wb") as out:
        out.write(b"\xff\xfe" + reg_text("Windows Registry Editor Version 5.00").encode("utf-16-le"))
    with open(os.path.join(HERE, "regedit4.reg"), "wb") as out:
        out.write(reg_text("REGEDIT4").encode("cp1252"))
    unix = os.path.join(HERE, "unix")
    for name, overrides in SESSIONS[:4] + SESSIONS[7:8]:
        body = "".join(f"{key}={value}\n" for key, value in fields(overrides))
        with open(os.path.join(unix, escape_unix(name)), "w", encoding="utf-8", newline="") as out:
            out.write(body)


if __name__ == "__main__":
    main()
