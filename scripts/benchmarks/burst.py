"""burst: first-response latency in bursts, how long a connection waits for its first answer.

Three cases, each printing the worst first response of every round (goal: none over 100 ms):
  (a) desktop: 6 pooled keep-alive connections opened at once after IDLE seconds of silence,
      each then asking every 50 ms for 3 s (a user typing in the app);
  (b) sixteen: 16 clients connect at once after IDLE seconds of silence, one request each;
  (c) stalled: 40 connections declare a 5,000-byte upload and send 1 byte; then one new
      connection asks for health (a fresh service each round).

Invariants: every service is stopped and its data dir removed whatever happens.
"""

import threading
import time

import benchlib
from benchlib import HEALTH, median, read_response, timed


def add_options(parser):
    parser.add_argument("--idle", type=float, default=5.5,
                        help="seconds of silence before each round of (a) and (b) (default 5.5: past the "
                             "old server's 5 s accept restart, the moment its bursts stalled)")


def run(args, profile, smoke=False):
    binary = benchlib.build(profile)
    print(f"burst run: (a) {args.rounds_a} rounds, (b) {args.rounds_b} rounds, (c) {args.rounds_c} rounds, "
          f"idle {args.idle} s")
    with benchlib.Service(binary) as service:
        worsts = []
        for _ in range(args.rounds_a):
            time.sleep(args.idle)
            worsts.append(max(_burst(service, 6, 60, 0.05)))
        _report("a: desktop, 6 pooled connections", worsts)
        worsts = []
        for _ in range(args.rounds_b):
            time.sleep(args.idle)
            worsts.append(max(_burst(service, 16, 1, 0)))
        _report("b: 16 clients at once", worsts)
    worsts = []
    for _ in range(args.rounds_c):
        with benchlib.Service(binary) as service:
            stalled = []
            for _ in range(40):
                sock = service.connect()
                sock.sendall(b"POST /api/hosts HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5000\r\n\r\n{")
                stalled.append(sock)

            def ask():
                with service.connect(timeout=60) as sock:
                    sock.sendall(HEALTH)
                    read_response(sock)
            worsts.append(timed(ask))
            for sock in stalled:
                sock.close()
    _report("c: after 40 stalled uploads", worsts)
    print(f"  command: {benchlib.command_line()}")


def _burst(service, clients, requests, pause):
    """`clients` threads connect at once; each makes `requests` requests `pause` s apart.
    Returns every client's first-response time (ms)."""
    firsts, lock, gate = [], threading.Lock(), threading.Barrier(clients)

    def client():
        gate.wait()
        started = time.perf_counter()
        with service.connect(timeout=60) as sock:
            for index in range(requests):
                sock.sendall(HEALTH)
                read_response(sock)
                if index == 0:
                    with lock:
                        firsts.append((time.perf_counter() - started) * 1000)
                time.sleep(pause)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return firsts


def _report(name, worsts):
    if not worsts:
        return
    worsts.sort()
    over = sum(worst > 100 for worst in worsts)
    print(f"  ({name}) {len(worsts)} rounds: worst first response per round: median "
          f"{median(worsts):.1f} ms, max {worsts[-1]:.1f} ms; rounds over 100 ms: {over}")
