"""abuse: floods of hostile sockets, one kind at a time, against a normal client's fresh
connections (docs/security.md, "Threat model of the HTTP layer").

Each flood runs SOCKETS sockets of one kind against a fresh service for DURATION seconds; each
socket connects again when the service closes it. The kinds:

  one-byte      connect, send one byte, then nothing
  head          send a request head one byte a second
  60k-head      send 60 KiB of an unfinished head at once, then nothing
  slow-reader   send 100 pipelined health requests, then never read
  body          (with a token) declare a 1,000-byte body and send it one byte a second
  long-poll     (with a token) GET /api/changes?wait=30, again and again

Meanwhile a normal client opens a fresh connection every 50 ms, asks for health (with the
token when the service has one) and times connect to answer. Goal: every fresh connection
answered, the worst under 100 ms. Prints, per flood, the client's count, failures, median,
p99 and max, and the service's peak threads, RSS and descriptors.

Invariants: every loop ends by itself at its flood's deadline; each service is stopped and
its data dir removed whatever happens.
"""

import multiprocessing
import os
import resource
import socket
import threading
import time

import benchlib
from benchlib import median, percentile, read_response

TOKEN = "abuse-benchmark-token-0123456789abcdef"
KINDS = ["one-byte", "head", "60k-head", "slow-reader", "body", "long-poll"]
WITH_TOKEN = {"body", "long-poll"}


def add_options(parser):
    parser.add_argument("--kind", action="append", choices=KINDS,
                        help="run only this flood (repeatable; default: every kind)")


def run(args, profile, smoke=False):
    sockets, duration = args.sockets, args.duration
    kinds = getattr(args, "kind", None) or KINDS
    # The attackers' own sockets must not run this script out of descriptors.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(soft, 8192), hard), hard))
    binary = benchlib.build(profile)
    print(f"abuse run: {sockets} hostile sockets of one kind at a time, {duration} s each; "
          f"a normal client opens a fresh connection every 50 ms (goal: all answered, max < 100 ms)")
    for kind in kinds:
        token = kind in WITH_TOKEN
        folder = benchlib.scratch("hm-abuse-")
        token_path = os.path.join(folder, "token")
        with open(token_path, "w") as file:
            file.write(TOKEN + "\n")
        os.chmod(token_path, 0o600)
        service_args = ["--token-file", token_path] if token else []
        with benchlib.Service(binary, args=service_args) as service:
            stop = time.time() + duration
            # The flood runs in a process of its own, so that its threads never hold up the
            # normal client's (Python runs one thread of a process at a time).
            flood = multiprocessing.get_context("fork").Process(
                target=_flood, args=(service, kind, sockets, stop), daemon=True)
            flood.start()
            latencies, failures, peak = _normal_client(service, stop, token)
            flood.join(30)
            refused = service.stderr_tail(10_000).count("refused one with 503")
        benchlib.forget(folder)
        latencies.sort()
        worst = latencies[-1] if latencies else float("nan")
        reasons = ", ".join(f"{count} {reason}" for reason, count in sorted(failures.items())) or "none"
        print(f"  {kind:<12}{' (token)' if token else '        '} fresh connections: {len(latencies)} answered, "
              f"failed: {reasons}; {refused} connections refused at the cap; median {median(latencies):.2f} ms, p99 {percentile(latencies, 0.99):.1f} ms, "
              f"max {worst:.1f} ms; service peak {peak[0]} threads, {peak[1]} MiB RSS, {peak[2]} descriptors")
    print(f"  command: {benchlib.command_line()}")


def _flood(service, kind, sockets, stop):
    threads = []
    for _ in range(sockets):
        thread = threading.Thread(target=_attack, args=(service, kind, stop), daemon=True)
        thread.start()
        threads.append(thread)
        time.sleep(0.001)
    for thread in threads:
        thread.join(max(0, stop - time.time()) + 5)


def _auth(token):
    return f"Authorization: Bearer {TOKEN}\r\n" if token else ""


def _attack(service, kind, stop):
    while time.time() < stop:
        try:
            with service.connect(timeout=max(0.1, stop - time.time())) as sock:
                _one_attack(sock, kind, stop)
        except (OSError, ConnectionError):
            time.sleep(0.05)


def _one_attack(sock, kind, stop):
    """One connection's attack, until the service closes it or the flood ends."""
    if kind == "one-byte":
        sock.sendall(b"G")
        _hold(sock, stop)
    elif kind == "head":
        head = b"GET /api/health HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + b"a" * 10000
        for index in range(len(head)):
            if time.time() >= stop:
                return
            sock.sendall(head[index:index + 1])
            time.sleep(1)
    elif kind == "60k-head":
        sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * (60 * 1024))
        _hold(sock, stop)
    elif kind == "slow-reader":
        sock.sendall(benchlib.HEALTH * 100)
        _hold(sock, stop, read=False)
    elif kind == "body":
        sock.sendall(f"POST /api/hosts HTTP/1.1\r\nHost: localhost\r\n{_auth(True)}"
                     f"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n".encode())
        while time.time() < stop:
            sock.sendall(b" ")
            time.sleep(1)
    elif kind == "long-poll":
        while time.time() < stop:
            sock.sendall(f"GET /api/changes?wait=30 HTTP/1.1\r\nHost: localhost\r\n{_auth(True)}\r\n".encode())
            status, _ = read_response(sock)
            if status == 503:
                time.sleep(1)  # Retry-After: 1


def _hold(sock, stop, read=True):
    """Keeps the connection until the service closes it or the flood ends."""
    while time.time() < stop:
        if not read:
            time.sleep(0.2)
            try:
                sock.setblocking(False)
                if sock.recv(1, socket.MSG_PEEK) == b"":
                    return
            except BlockingIOError:
                pass
            finally:
                sock.setblocking(True)
            continue
        try:
            if sock.recv(1) == b"":
                return
        except socket.timeout:
            return


def _normal_client(service, stop, token):
    latencies, failures = [], {}
    peak = [0, 0, 0]
    request = f"GET /api/health HTTP/1.1\r\nHost: localhost\r\n{_auth(token)}Connection: close\r\n\r\n".encode()
    time.sleep(1)  # the flood is in place
    while time.time() < stop:
        started = time.perf_counter()
        try:
            with service.connect(timeout=5) as sock:
                sock.sendall(request)
                status, _ = read_response(sock)
            if status != 200:
                raise ConnectionError(status)
            latencies.append((time.perf_counter() - started) * 1000)
        except (OSError, ConnectionError) as error:
            reason = type(error).__name__ if not error.args else f"{type(error).__name__}({error.args[0]})"
            failures[reason] = failures.get(reason, 0) + 1
        peak = [max(old, new) for old, new in zip(peak, service.status())]
        time.sleep(0.05)
    return latencies, failures, peak
