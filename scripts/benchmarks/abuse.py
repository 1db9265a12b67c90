"""abuse: many hostile sockets against the service while a normal client keeps asking.

A third of the sockets sit idle (connect, send nothing), a third send a request head one byte
a second (slow headers), a third declare a 1,000-byte body and send it one byte a second (slow
bodies); each reconnects when the service closes it. Meanwhile a normal client asks for health
every 50 ms on one keep-alive connection and on a new connection each time. Prints the normal
client's latency (goal: max under 100 ms) and the service's peak threads and memory.

Invariants: every loop ends by itself at the run's deadline; the service is stopped and its
data dir removed whatever happens.
"""

import resource
import threading
import time

import benchlib
from benchlib import HEALTH, median, read_response


def run(args, profile, smoke=False):
    sockets, duration = args.sockets, args.duration
    # The attackers' own sockets must not run this script out of descriptors.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(soft, 8192), hard), hard))
    with benchlib.Service(benchlib.build(profile)) as service:
        stop = time.time() + duration
        for number in range(sockets):
            kind = ("idle", "headers", "body")[number % 3]
            threading.Thread(target=_attack, args=(service, kind, stop), daemon=True).start()
            time.sleep(0.002)
        latencies, failures, peak_threads, peak_rss = _normal_client(service, stop)
    print(f"abuse run: {sockets} hostile sockets (idle / slow headers / slow bodies) for {duration} s")
    for kind, values in latencies.items():
        values.sort()
        if values:
            print(f"  normal client, {kind}: {len(values)} requests, median {median(values):.2f} ms, "
                  f"p99 {values[max(0, int(len(values) * 0.99) - 1)]:.1f} ms, max {values[-1]:.1f} ms, "
                  f"failed: {failures[kind]}")
    print(f"  service: peak {peak_threads} threads, peak RSS {peak_rss} MiB")
    print(f"  command: {benchlib.command_line()}")


def _attack(service, kind, stop):
    header = b"GET /api/health HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + b"a" * 10000
    while time.time() < stop:
        try:
            with service.connect() as sock:
                if kind == "body":
                    sock.sendall(b"POST /api/hosts HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n")
                index = 0
                while time.time() < stop:
                    if kind == "idle":
                        if sock.recv(1) == b"":
                            break  # closed by the service: connect again
                        continue
                    sock.sendall(header[index:index + 1] if kind == "headers" else b"x")
                    index += 1
                    time.sleep(1)
        except OSError:
            time.sleep(0.2)


def _normal_client(service, stop):
    latencies = {"keep-alive": [], "new connection": []}
    failures = {"keep-alive": 0, "new connection": 0}
    peak_threads = peak_rss = 0
    keep = service.connect()
    while time.time() < stop:
        for kind in latencies:
            started = time.perf_counter()
            try:
                if kind == "keep-alive":
                    keep.sendall(HEALTH)
                    status, _ = read_response(keep)
                else:
                    with service.connect() as sock:
                        sock.sendall(HEALTH)
                        status, _ = read_response(sock)
                if status != 200:
                    raise ConnectionError(status)
                latencies[kind].append((time.perf_counter() - started) * 1000)
            except (OSError, ConnectionError):
                failures[kind] += 1
                if kind == "keep-alive":
                    keep = service.connect()
        threads, rss, _ = service.status()
        peak_threads, peak_rss = max(peak_threads, threads), max(peak_rss, rss)
        time.sleep(0.05)
    keep.close()
    return latencies, failures, peak_threads, peak_rss
