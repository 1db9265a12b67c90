"""agent: SSH agent signatures, how long one sign request takes through the socket, per key type.

Keys are generated through the API (ed25519, ECDSA P-256/P-384/P-521, RSA 2048/3072 and an
ed25519 key with a stored passphrase), then one client connection sends SIGN_REQUEST after
SIGN_REQUEST (32 random bytes, as a session hash; RSA with the rsa-sha2-256 flag) and times
each answer. Also the time of an identity list, the cheapest request, as the floor. Each
request also writes its audit log entry.

Invariants: the service is stopped and its data dir (and socket) removed whatever happens.
"""

import base64
import os
import socket
import struct
import time

import benchlib
from benchlib import call, median, percentile
from benchmarks import seed


def run(args, profile, smoke=False):
    requests = args.requests
    # RSA 4096 signs like 3072, only slower to make; smoke makes RSA only at its smallest size.
    keys = [key for key in seed.KEY_TYPES if key[0] != "rsa 4096" and not (smoke and key[0] == "rsa 3072")]
    with benchlib.Service(benchlib.build(profile)) as service:
        made = [(label, base64.b64decode(key["public_key"].split()[1]))
                for (label, _), key in zip(keys, seed.create_keys(service.port, keys))]
        path = call(service.port, "GET", "/api/agent")["socket"]
        agent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        agent.connect(path)
        rows = [("list identities", _times(agent, bytes([11]), 12, requests))]
        for label, blob in made:
            flags = 2 if label.startswith("rsa") else 0
            message = bytes([13]) + _string(blob) + _string(os.urandom(32)) + struct.pack(">I", flags)
            rows.append((f"sign, {label}", _times(agent, message, 14, requests)))
        agent.close()
    print(f"{'request':34} {'median ms':>10} {'p99 ms':>8} {'max ms':>8}")
    for label, times in rows:
        print(f"{label:34} {median(times):10.2f} {percentile(times, 0.99):8.2f} {max(times):8.2f}")
    print(f"({requests} requests each, one client connection; command: {benchlib.command_line()})")


def _times(agent, message, answer_type, requests):
    """Milliseconds of `requests` exchanges of `message`, each answered with `answer_type`."""
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        answer = _exchange(agent, message)
        times.append((time.perf_counter() - started) * 1000)
        if answer[:1] != bytes([answer_type]):
            benchlib.fail(f"the agent answered type {answer[:1]!r} instead of {answer_type}")
    return times


def _string(data):
    return struct.pack(">I", len(data)) + data


def _exchange(sock, message):
    sock.sendall(struct.pack(">I", len(message)) + message)
    (length,) = struct.unpack(">I", sock.recv(4, socket.MSG_WAITALL))
    return sock.recv(length, socket.MSG_WAITALL)
