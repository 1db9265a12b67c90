#!/usr/bin/env python3
"""Writes the mRemoteNG samples and password vectors of tests/samples/import/mremoteng/.

mRemoteNG's scheme (AeadCryptographyProvider, 1.76+), from its published source:
base64(salt(16) || nonce(16) || AES-256-GCM ciphertext || tag(16)), associated data = salt,
key = PBKDF2-HMAC-SHA1(password, salt, KdfIterations, 32 bytes); the password is the user's
or the built-in "mR3m", as bytes the way BouncyCastle's PKCS5PasswordToBytes makes them
(each UTF-16 unit's low byte). `Protected` is "ThisIsProtected" / "ThisIsNotProtected"
encrypted the same way; FullFileEncryption="true" encrypts the root's inner XML the same way.
Written with Python's `cryptography` 48 (an implementation independent of the Rust one).
Deterministic (seeded), so a re-run writes the same files.

Run: python3 tests/samples/import/mremoteng/make.py
"""

import base64
import os
import random
import uuid

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = random.Random(0x3E3E)
DEFAULT_PASSWORD = "mR3m"


def rand(n):
    return bytes(RNG.getrandbits(8) for _ in range(n))


def guid():
    return str(uuid.UUID(bytes=rand(16), version=4))


def password_bytes(password):
    return bytes(unit & 0xFF for unit in memoryview(password.encode("utf-16-le")).cast("H"))


def encrypt(plain, password, iterations):
    salt, nonce = rand(16), rand(16)
    key = PBKDF2HMAC(hashes.SHA1(), 32, salt, iterations).derive(password_bytes(password))
    sealed = AESGCM(key).encrypt(nonce, plain.encode("utf-8"), salt)
    return base64.b64encode(salt + nonce + sealed).decode("ascii")


# What mRemoteNG 1.77 writes for every node (ConfVersion 2.8), defaults first.
NODE_DEFAULTS = [
    ("Descr", ""), ("Icon", "mRemoteNG"), ("Panel", "General"), ("Username", ""),
    ("Domain", ""), ("Password", ""), ("Hostname", ""), ("Protocol", "RDP"),
    ("RdpVersion", "Highest"), ("PuttySession", "Default Settings"), ("Port", "3389"),
    ("ConnectToConsole", "false"), ("UseCredSsp", "true"), ("UseRestrictedAdmin", "false"),
    ("UseRCG", "false"), ("UseVmId", "false"), ("UseEnhancedMode", "false"),
    ("RenderingEngine", "EdgeChromium"), ("RDPAuthenticationLevel", "NoAuth"),
    ("RDPMinutesToIdleTimeout", "0"), ("RDPAlertIdleTimeout", "false"), ("LoadBalanceInfo", ""),
    ("Colors", "Colors16Bit"), ("Resolution", "FitToWindow"), ("AutomaticResize", "true"),
    ("DisplayWallpaper", "false"), ("DisplayThemes", "false"), ("EnableFontSmoothing", "false"),
    ("EnableDesktopComposition", "false"), ("DisableFullWindowDrag", "false"),
    ("DisableMenuAnimations", "false"), ("DisableCursorShadow", "false"),
    ("DisableCursorBlinking", "false"), ("CacheBitmaps", "false"), ("RedirectDiskDrives", "None"),
    ("RedirectPorts", "false"), ("RedirectPrinters", "false"), ("RedirectClipboard", "false"),
    ("RedirectSmartCards", "false"), ("RedirectSound", "DoNotPlay"), ("SoundQuality", "Dynamic"),
    ("RedirectAudioCapture", "false"), ("RedirectKeys", "false"), ("Connected", "false"),
    ("PreExtApp", ""), ("PostExtApp", ""), ("MacAddress", ""), ("UserField", ""),
    ("Favorite", "false"), ("ExtApp", ""), ("StartProgram", ""), ("StartProgramWorkDir", ""),
    ("VNCCompression", "CompNone"), ("VNCEncoding", "EncHextile"), ("VNCAuthMode", "AuthVNC"),
    ("VNCProxyType", "ProxyNone"), ("VNCProxyIP", ""), ("VNCProxyPort", "0"),
    ("VNCProxyUsername", ""), ("VNCProxyPassword", ""), ("VNCColors", "ColNormal"),
    ("VNCSmartSizeMode", "SmartSAspect"), ("VNCViewOnly", "false"),
    ("RDGatewayUsageMethod", "Never"), ("RDGatewayHostname", ""),
    ("RDGatewayUseConnectionCredentials", "Yes"), ("RDGatewayUsername", ""),
    ("RDGatewayPassword", ""), ("RDGatewayDomain", ""),
    ("RDGatewayExternalCredentialProvider", "None"), ("RDGatewayUserViaAPI", ""),
    ("ExternalCredentialProvider", "None"), ("UserViaAPI", ""), ("EC2InstanceId", ""),
    ("EC2Region", ""), ("ExternalAddressProvider", "None"), ("SSHTunnelConnectionName", ""),
    ("OpeningCommand", ""), ("SSHOptions", ""), ("VmId", ""),
]
INHERITABLE = [
    "CacheBitmaps", "Colors", "Description", "DisplayThemes", "DisplayWallpaper",
    "EnableFontSmoothing", "EnableDesktopComposition", "DisableFullWindowDrag",
    "DisableMenuAnimations", "DisableCursorShadow", "DisableCursorBlinking", "Domain", "Icon",
    "Panel", "Password", "Port", "Protocol", "RdpVersion", "PuttySession", "RedirectDiskDrives",
    "RedirectKeys", "RedirectPorts", "RedirectPrinters", "RedirectClipboard",
    "RedirectSmartCards", "RedirectSound", "SoundQuality", "Resolution", "AutomaticResize",
    "UseConsoleSession", "UseCredSsp", "RenderingEngine", "Username", "ExternalCredentialProvider",
    "UserViaAPI", "SSHTunnelConnectionName", "OpeningCommand", "SSHOptions", "Favorite",
]


def escape(text):
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


class Writer:
    def __init__(self, password, iterations):
        self.password = password
        self.iterations = iterations
        self.vectors = []

    def secret(self, plain):
        text = encrypt(plain, self.password, self.iterations)
        self.vectors.append(f"{self.iterations}\t{self.password}\t{text}\t{plain}")
        return text

    def node(self, kind, name, indent, children=(), inherit=(), **fields):
        attributes = [("Name", name), ("VmId", ""), ("Type", kind)]
        if kind == "Container":
            attributes.append(("Expanded", "true"))
        attributes.append(("Id", fields.pop("Id", guid())))
        if "Password" in fields and fields["Password"]:
            fields["Password"] = self.secret(fields["Password"])
        for key, default in NODE_DEFAULTS:
            if key != "VmId":
                attributes.append((key, fields.pop(key, default)))
        assert not fields, fields
        for key in INHERITABLE:
            attributes.append(("Inherit" + key, "true" if key in inherit else "false"))
        pad = "    " * indent
        text = " ".join(f'{key}="{escape(value)}"' for key, value in attributes)
        if not children:
            return [f"{pad}<Node {text} />"]
        lines = [f"{pad}<Node {text}>"]
        for child in children:
            lines += child(indent + 1)
        return lines + [f"{pad}</Node>"]

    def document(self, nodes, full_file=False, protected=True, engine=("AES", "GCM"),
                 version="2.8"):
        verifier = self.secret("ThisIsProtected" if protected else "ThisIsNotProtected")
        body = []
        for node in nodes:
            body += node(1)
        head = (f'<mrng:Connections xmlns:mrng="http://mremoteng.org" Name="Connections" '
                f'Export="false" EncryptionEngine="{engine[0]}" BlockCipherMode="{engine[1]}" '
                f'KdfIterations="{self.iterations}" FullFileEncryption='
                f'"{"true" if full_file else "false"}" Protected="{verifier}" '
                f'ConfVersion="{version}">')
        if full_file:
            inner = "\r\n" + "\r\n".join(body) + "\r\n"
            body = [self.secret_raw(inner)]
        return '<?xml version="1.0" encoding="utf-8"?>\r\n' + head + "\r\n" + "\r\n".join(
            body) + "\r\n</mrng:Connections>"

    def secret_raw(self, plain):
        return encrypt(plain, self.password, self.iterations)


def ssh(**fields):
    fields.setdefault("Protocol", "SSH2")
    fields.setdefault("Port", "22")
    return fields


def main_sample(writer):
    tunnel_id = "4f6c2a8e-1b2d-4c3e-9f10-aabbccddee01"
    n = writer.node
    return [
        lambda i: n("Container", "Prod", i, Username="admin", Password="Pr0d-admin!",
                    Id="0c0c0c0c-0000-4000-8000-000000000001", Protocol="SSH2", Port="2222",
                    children=[
            lambda i: n("Connection", "bastion", i, Id=tunnel_id, **ssh(
                Hostname="bastion.example.com", Username="jump", Password="b4stion")),
            lambda i: n("Container", "Web", i, Id="0c0c0c0c-0000-4000-8000-000000000002",
                        inherit=("Username", "Password", "Port"), children=[
                lambda i: n("Connection", "web 1", i,
                            Id="1e1e1e1e-0000-4000-8000-000000000011",
                            inherit=("Username", "Password"),
                            Descr="Front web server & cache",
                            **ssh(Hostname="10.0.1.11",
                                  SSHTunnelConnectionName="bastion")),
                lambda i: n("Connection", "web 2", i,
                            Id="1e1e1e1e-0000-4000-8000-000000000012",
                            inherit=("Username", "Password", "Port"),
                            OpeningCommand="sudo -i",
                            Protocol="SSH2", Hostname="10.0.1.12", Port="22"),
                lambda i: n("Connection", "web-rdp", i,
                            Id="1e1e1e1e-0000-4000-8000-000000000013",
                            Hostname="10.0.1.20", Protocol="RDP", Port="3389",
                            inherit=("Username", "Password")),
            ]),
            lambda i: n("Connection", "db", i, Id="1e1e1e1e-0000-4000-8000-000000000021",
                        **ssh(Hostname="db.internal", Username="postgres",
                              Password="Db-pa55 wörd", Domain="CORP",
                              PuttySession="Tuned", SSHOptions="-C -X")),
        ]),
        lambda i: n("Container", "Lab", i, Id="0c0c0c0c-0000-4000-8000-000000000003",
                    children=[
            lambda i: n("Connection", "old-ssh1", i,
                        Id="1e1e1e1e-0000-4000-8000-000000000031",
                        **ssh(Protocol="SSH1", Hostname="old.lab", Username="root")),
            lambda i: n("Connection", "vnc-box", i, Id="1e1e1e1e-0000-4000-8000-000000000032",
                        Hostname="vnc.lab", Protocol="VNC", Port="5900"),
            lambda i: n("Connection", "wiki", i, Id="1e1e1e1e-0000-4000-8000-000000000033",
                        Hostname="wiki.lab", Protocol="HTTPS", Port="443"),
            lambda i: n("Connection", "switch", i, Id="1e1e1e1e-0000-4000-8000-000000000034",
                        Hostname="switch.lab", Protocol="Telnet", Port="23"),
            lambda i: n("Connection", "no-host", i, Id="1e1e1e1e-0000-4000-8000-000000000035",
                        **ssh(Username="x")),
            lambda i: n("Connection", "lost-tunnel", i,
                        Id="1e1e1e1e-0000-4000-8000-000000000036",
                        **ssh(Hostname="lost.lab", Username="ann",
                              SSHTunnelConnectionName="no such connection", Favorite="true")),
        ]),
        lambda i: n("Connection", "top", i, Id="1e1e1e1e-0000-4000-8000-000000000041",
                    **ssh(Hostname="top.example.com", Username="ann", Port="2200")),
    ]


def write(name, text):
    with open(os.path.join(HERE, name), "w", encoding="utf-8", newline="") as out:
        out.write(text)


def main():
    vectors = ["# iterations\tpassword\tbase64\tplaintext (written by make.py)"]

    default = Writer(DEFAULT_PASSWORD, 10000)
    write("confCons.xml", default.document(main_sample(default), protected=False))
    vectors += default.vectors[:4]

    custom = Writer("Corp pa55 ünïcode€", 1000)
    n = custom.node
    write("custom-password.xml", custom.document([
        lambda i: n("Container", "Corp", i, Id="0c0c0c0c-0000-4000-8000-0000000000c1",
                    children=[
            lambda i: n("Connection", "corp-host", i, Id="1e1e1e1e-0000-4000-8000-0000000000c2",
                        **ssh(Hostname="corp.example.com", Username="corp",
                              Password="s3cret-corp")),
        ]),
    ]))
    vectors += custom.vectors

    full = Writer(DEFAULT_PASSWORD, 1000)
    n = full.node
    write("full-file.xml", full.document([
        lambda i: n("Container", "Hidden", i, Id="0c0c0c0c-0000-4000-8000-0000000000f1",
                    children=[
            lambda i: n("Connection", "hidden-host", i,
                        Id="1e1e1e1e-0000-4000-8000-0000000000f2",
                        **ssh(Hostname="hidden.example.com", Username="h",
                              Password="fu11-file")),
        ]),
    ], full_file=True))

    legacy = Writer(DEFAULT_PASSWORD, 1000)
    legacy_text = legacy.document([
        lambda i: legacy.node("Connection", "legacy", i,
                              Id="1e1e1e1e-0000-4000-8000-0000000000a1",
                              **ssh(Hostname="legacy.example.com", Username="l")),
    ], engine=("AES", "GCM"), version="2.5")
    # An old file: no engine attributes, and a CBC value in the old form (IV || ciphertext).
    legacy_text = legacy_text.replace(' EncryptionEngine="AES" BlockCipherMode="GCM"', "")
    legacy_text = legacy_text.replace(' KdfIterations="1000" FullFileEncryption="false"', "")
    legacy_text = legacy_text.replace('Password="" Hostname="legacy',
                                      'Password="%s" Hostname="legacy'
                                      % base64.b64encode(rand(32)).decode("ascii"))
    write("legacy.xml", legacy_text)

    write("vectors.txt", "\n".join(vectors) + "\n")


if __name__ == "__main__":
    main()
