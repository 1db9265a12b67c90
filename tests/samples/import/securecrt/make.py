#!/usr/bin/env python3
"""Writes the SecureCRT samples and password vectors of tests/samples/import/securecrt/.

An implementation of SecureCRT's password schemes independent of the Rust one, from their
published descriptions:
  - "02:": AES-256-CBC, key SHA-256(config passphrase), IV zero, plaintext
    LE u32 length || UTF-8 || SHA-256 || 1..16 random bytes to the block size;
  - "03:": salt(16) || AES-256-CBC with key || IV = bcrypt_pbkdf(passphrase, salt, 16, 48),
    same layout, padding 8..23 bytes;
  - the old "Password" = "u" + hex: Blowfish-CBC(key 1, IV 0) over
    4 random bytes || Blowfish-CBC(key 2, IV 0)(UTF-16LE || 00 00 || padding) || 4 random bytes.
AES, Blowfish and SHA come from `cryptography` 48. Python has no bcrypt_pbkdf (its Blowfish
exposes no key schedule), so this script writes Blowfish's EksBlowfish state and OpenBSD's
bcrypt_pbkdf from their published definitions, the S-boxes from the hex digits of pi, and
checks its Blowfish against `cryptography`'s first. Pure Python: each "03:" value costs
tens of seconds. Deterministic (seeded), so a re-run writes the same files.

Run: python3 tests/samples/import/securecrt/make.py
"""

import hashlib
import os
import random
import struct
import sys

from cryptography.hazmat.decrepit.ciphers.algorithms import Blowfish as BlowfishAlgorithm
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = random.Random(0x5EC0)

V1_KEY_OUTER = bytes.fromhex("24A63DDE5BD3B3829C7E06F40816AA07")
V1_KEY_INNER = bytes.fromhex("5FB045A29417D916C6C6A2FF064182B7")


def rand(n):
    return bytes(RNG.getrandbits(8) for _ in range(n))


# --- Blowfish from its definition ------------------------------------------------------

def pi_hex_words(count):
    """The first `count` 32-bit words of pi's fractional part (Machin's formula)."""
    digits = count * 8 + 16
    scale = 16 ** digits

    def arctan_inv(x):
        total, term, k, sign = 0, scale // x, 1, 1
        x2 = x * x
        while term:
            total += sign * (term // k)
            term //= x2
            k += 2
            sign = -sign
        return total

    pi = 16 * arctan_inv(5) - 4 * arctan_inv(239)
    frac = pi - 3 * scale
    text = "%0*x" % (digits, frac)
    return [int(text[i * 8:i * 8 + 8], 16) for i in range(count)]


WORDS = pi_hex_words(18 + 4 * 256)
P_INIT = WORDS[:18]
S_INIT = [WORDS[18 + 256 * i:18 + 256 * (i + 1)] for i in range(4)]
assert P_INIT[0] == 0x243F6A88 and S_INIT[0][0] == 0xD1310BA6


class Eks:
    """Blowfish's state with OpenBSD's bcrypt key-schedule operations."""

    def __init__(self):
        self.p = list(P_INIT)
        self.s = [list(box) for box in S_INIT]

    def encrypt(self, left, right):
        p, s0, s1, s2, s3 = self.p, self.s[0], self.s[1], self.s[2], self.s[3]
        for i in range(16):
            left ^= p[i]
            right ^= ((((s0[left >> 24] + s1[(left >> 16) & 255]) & 0xFFFFFFFF)
                       ^ s2[(left >> 8) & 255]) + s3[left & 255]) & 0xFFFFFFFF
            left, right = right, left
        left, right = right, left
        right ^= p[16]
        left ^= p[17]
        return left, right

    @staticmethod
    def stream(data):
        position = 0
        while True:
            word = 0
            for _ in range(4):
                word = (word << 8) | data[position]
                position = (position + 1) % len(data)
            yield word

    def expand(self, data, key):
        """Blowfish_expandstate (data may be empty: Blowfish_expand0state)."""
        keys = self.stream(key)
        for i in range(18):
            self.p[i] ^= next(keys)
        datas = self.stream(data) if data else None
        left = right = 0

        def step():
            nonlocal left, right
            if datas:
                left ^= next(datas)
                right ^= next(datas)
            left, right = self.encrypt(left, right)
            return left, right

        for i in range(0, 18, 2):
            self.p[i], self.p[i + 1] = step()
        for box in self.s:
            for i in range(0, 256, 2):
                box[i], box[i + 1] = step()


def check_blowfish():
    key = b"0123456789abcdef"
    state = Eks()
    state.expand(b"", key)
    block = b"8 bytes!"
    left, right = struct.unpack(">II", block)
    ours = struct.pack(">II", *state.encrypt(left, right))
    theirs = Cipher(BlowfishAlgorithm(key), modes.ECB()).encryptor().update(block)
    assert ours == theirs, "Blowfish from pi disagrees with cryptography's"


def bhash(sha_pass, sha_salt):
    state = Eks()
    state.expand(sha_salt, sha_pass)
    for _ in range(64):
        state.expand(b"", sha_salt)
        state.expand(b"", sha_pass)
    words = list(struct.unpack(">8I", b"OxychromaticBlowfishSwatDynamite"))
    for _ in range(64):
        for i in range(0, 8, 2):
            words[i], words[i + 1] = state.encrypt(words[i], words[i + 1])
    return struct.pack("<8I", *words)


def bcrypt_pbkdf(passphrase, salt, rounds, length):
    stride = (length + 31) // 32
    sha_pass = hashlib.sha512(passphrase).digest()
    blocks = []
    for count in range(1, stride + 1):
        out = bhash(sha_pass, hashlib.sha512(salt + struct.pack(">I", count)).digest())
        block = bytearray(out)
        for _ in range(1, rounds):
            out = bhash(sha_pass, hashlib.sha512(out).digest())
            block = bytearray(a ^ b for a, b in zip(block, out))
        blocks.append(bytes(block))
    return bytes(blocks[i % stride][i // stride] for i in range(length))


# --- the schemes -----------------------------------------------------------------------

def aes_cbc(key, iv, data):
    return Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor().update(data)


def lvc(password, minimum_padding):
    value = password.encode("utf-8")
    body = struct.pack("<I", len(value)) + value + hashlib.sha256(value).digest()
    padding = 16 - len(body) % 16
    if padding < minimum_padding:
        padding += 16
    return body + rand(padding)


def encrypt_02(password, passphrase=""):
    key = hashlib.sha256(passphrase.encode("utf-8")).digest()
    return "02:" + aes_cbc(key, bytes(16), lvc(password, 1)).hex()


def encrypt_03(password, passphrase=""):
    salt = rand(16)
    material = bcrypt_pbkdf(passphrase.encode("utf-8"), salt, 16, 48)
    return "03:" + (salt + aes_cbc(material[:32], material[32:], lvc(password, 8))).hex()


def encrypt_v1(password):
    plain = password.encode("utf-16-le") + b"\x00\x00"
    plain += rand(8 - len(plain) % 8)
    inner = Cipher(BlowfishAlgorithm(V1_KEY_INNER), modes.CBC(bytes(8))).encryptor().update(plain)
    outer = Cipher(BlowfishAlgorithm(V1_KEY_OUTER), modes.CBC(bytes(8))).encryptor()
    return "u" + outer.update(rand(4) + inner + rand(4)).hex()


# --- the export ------------------------------------------------------------------------

DEFAULTS = [
    ("dword", "ANSI Color", "1"),
    ("string", "Emulation", "Xterm"),
    ("dword", "Rows", "24"),
    ("dword", "Cols", "80"),
    ("dword", "Scrollback", "500"),
    ("string", "Normal Font v2", "Consolas"),
    ("dword", "Use Global ANSI Colors", "1"),
    ("string", "Key Exchange Algorithms", "curve25519-sha256,ecdh-sha2-nistp256"),
    ("string", "Cipher List", "aes256-gcm@openssh.com,aes256-ctr"),
    ("dword", "Idle Check", "0"),
    ("dword", "Forward X11", "0"),
    ("dword", "Enable Agent Forwarding", "0"),
    ("dword", "Compression", "0"),
    ("dword", "Use Login Script", "0"),
    ("string", "Firewall Name", "None"),
    ("dword", "Use Global Public Key", "1"),
]


def escape(text):
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def session(name, fields, indent):
    pad = "\t" * indent
    lines = [f'{pad}<key name="{escape(name)}">']
    given = {field[1] for field in fields}
    for kind, key, value in fields + [d for d in DEFAULTS if d[1] not in given]:
        if kind == "array":
            lines.append(f'{pad}\t<array name="{escape(key)}">')
            lines += [f"{pad}\t\t<string>{escape(line)}</string>" for line in value]
            lines.append(f"{pad}\t</array>")
        else:
            lines.append(f'{pad}\t<{kind} name="{escape(key)}">{escape(value)}</{kind}>')
    lines.append(f'{pad}\t<dword name="Is Session">1</dword>')
    lines.append(f"{pad}</key>")
    return lines


def folder(name, children, indent):
    pad = "\t" * indent
    lines = [f'{pad}<key name="{escape(name)}">',
             f'{pad}\t<key name="__FolderData__">',
             f'{pad}\t\t<dword name="Is Expanded">1</dword>',
             f"{pad}\t</key>"]
    for child in children:
        lines += child(indent + 1)
    lines.append(f"{pad}</key>")
    return lines


def ssh(host, user=None, port=22, extra=()):
    fields = [("string", "Protocol Name", "SSH2"), ("string", "Hostname", host),
              ("dword", "[SSH2] Port", str(port))]
    if user is not None:
        fields.append(("string", "Username", user))
    return fields + list(extra)


def document(sessions, credentials=()):
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', '<VanDyke version="3.0">']
    if credentials:
        lines.append('\t<key name="Credentials">')
        for name, user, secret in credentials:
            lines += [f'\t\t<key name="{escape(name)}">',
                      f'\t\t\t<string name="Username">{escape(user)}</string>',
                      f'\t\t\t<string name="Password V2">{secret}</string>',
                      "\t\t</key>"]
        lines.append("\t</key>")
    lines.append('\t<key name="Sessions">')
    for child in sessions:
        lines += child(2)
    lines += ["\t</key>", "</VanDyke>", ""]
    return "\n".join(lines)


def main():
    check_blowfish()
    vectors = ["# scheme\tpassphrase (- = empty)\tciphertext\tplaintext (written by make.py)"]

    def vector(scheme, passphrase, text, plain):
        vectors.append(f"{scheme}\t{passphrase or '-'}\t{text}\t{plain}")
        return text

    print("deriving 03 keys (pure Python, slow)...", file=sys.stderr)
    db_pw = vector("03", "", encrypt_03("Db-pa55 wörd"), "Db-pa55 wörd")
    cred_pw = vector("03", "", encrypt_03("cr3d-admin"), "cr3d-admin")
    bastion_pw = vector("02", "", encrypt_02("b4stion!"), "b4stion!")
    old_pw = vector("v1", "", encrypt_v1("legacy-Pass1"), "legacy-Pass1")
    vector("02", "", encrypt_02(""), "")
    vector("02", "corp passphrase", encrypt_02("with-passphrase", "corp passphrase"), "with-passphrase")
    custom_pw = vector("03", "corp passphrase", encrypt_03("s3cret-corp", "corp passphrase"), "s3cret-corp")

    sessions = [
        lambda i: session("Default", [("string", "Protocol Name", "SSH2"),
                                      ("dword", "[SSH2] Port", "22")], i),
        lambda i: folder("Prod", [
            lambda i: session("bastion", ssh("bastion.example.com", "jump", 2222, [
                ("string", "Password V2", bastion_pw),
                ("string", "SSH2 Authentications V2", "password,publickey,keyboard-interactive"),
            ]), i),
            lambda i: folder("Web", [
                lambda i: session("web 1", ssh("10.0.1.11", "deploy", 22, [
                    ("string", "Firewall Name", "Session:Prod/bastion"),
                    ("dword", "Use Global Public Key", "0"),
                    ("string", "Identity Filename V2",
                     "C:\\Users\\ann\\.ssh\\id_ed25519::rawkey"),
                    ("string", "SSH2 Authentications V2", "publickey,password"),
                    ("dword", "Forward X11", "1"),
                    ("dword", "Enable Agent Forwarding", "1"),
                    ("array", "Description", ["Front web server", "behind the bastion"]),
                ]), i),
                lambda i: session("web 2", ssh("10.0.1.12", "deploy", 22, [
                    ("string", "Firewall Name", "Session:Prod/bastion"),
                    ("string", "Remote Command", "tmux new -A -s main"),
                    ("array", "Port Forward Table V2", [
                        "Intranet|127.0.0.1,3128|1|webproxy.corp|3128||",
                        "Local DB|5432|0||5432||",
                        "SOCKS|1080|0|socks,|0||",
                        "Desktop|127.0.0.2,3390|1|MSLOGIN01|3389|"
                        "C:\\windows\\system32\\mstsc.exe|/v:127.0.0.2:3390",
                    ]),
                    ("array", "Reverse Forward Table V2", ["Back|9000|0||22||"]),
                ]), i),
            ], i),
            lambda i: folder("DB", [
                lambda i: session("db-main", ssh("db.internal", "postgres", 22, [
                    ("string", "Password V2", db_pw),
                    ("string", "Firewall Name", "Corporate SOCKS"),
                ]), i),
                lambda i: session("db-admin", ssh("db.internal", None, 22, [
                    ("string", "Credential Title", "admin-cred"),
                    ("dword", "Use Login Script", "1"),
                    ("string", "Login Script V3", "wait ogin: send admin"),
                ]), i),
            ], i),
        ], i),
        lambda i: folder("Lab", [
            lambda i: session("old-box", [("string", "Protocol Name", "SSH1"),
                                          ("string", "Hostname", "old.lab"),
                                          ("dword", "[SSH1] Port", "22"),
                                          ("string", "Username", "root"),
                                          ("string", "Password", old_pw)], i),
            lambda i: session("switch", [("string", "Protocol Name", "Telnet"),
                                         ("string", "Hostname", "switch.lab"),
                                         ("dword", "Port", "23")], i),
            lambda i: session("console", [("string", "Protocol Name", "Serial"),
                                          ("string", "Com Port", "COM3")], i),
            lambda i: session("no-host", [("string", "Protocol Name", "SSH2"),
                                          ("dword", "[SSH2] Port", "22"),
                                          ("string", "Username", "x")], i),
            lambda i: session("compressed", ssh("zip.lab", "ann", 65535, [
                ("dword", "Compression", "1"),
                ("string", "Identity Filename V2", "${VDS_USER_DATA_PATH}\\Identity::rawkey"),
                ("array", "Port Forward Table V2", ["broken|x|1|h|1||"]),
            ]), i),
        ], i),
        lambda i: session("top & level", ssh("top.example.com", "ann", 22), i),
    ]
    with open(os.path.join(HERE, "sessions.xml"), "w", encoding="utf-8", newline="\n") as out:
        out.write(document(sessions, [("admin-cred", "admin", cred_pw)]))

    custom = [lambda i: folder("Corp", [
        lambda i: session("corp-host", ssh("corp.example.com", "corp", 22, [
            ("string", "Password V2", custom_pw),
        ]), i),
    ], i)]
    with open(os.path.join(HERE, "passphrase.xml"), "w", encoding="utf-8", newline="\n") as out:
        out.write(document(custom))

    with open(os.path.join(HERE, "vectors.txt"), "w", encoding="utf-8", newline="\n") as out:
        out.write("\n".join(vectors) + "\n")


if __name__ == "__main__":
    main()
