"""feed: the change feed under load (docs/api.md, "Change feed"). Does holding many waiting
readers cost the other clients anything, and how soon does a waiting reader get a write?

  (1) a client's reads (GET /api/hosts/:id, one keep-alive connection, back to back),
      with no feed reader, then with WAITERS readers waiting on GET /api/changes;
  (2) the same client's writes (PUT /api/hosts/:id), with no reader, then with WAITERS
      readers following the feed (every write wakes all of them, and each asks again: the
      service answers WAITERS more requests per write);
  (3) delivery: writes 20 ms apart while WAITERS readers follow the feed; for each write and
      each reader, the time from the write's answer reaching the writer to the entry
      reaching the reader (negative when the reader got it first). Also with one reader.

Every figure is a median of REQUESTS (writes: REQUESTS / 4) requests, measured in 5 rounds
that alternate the two cases, so that a change in the machine's load hits both alike; the
readers and the writer share the machine's cores with the service, so read the ratios.

Invariants: every reader ends (one more write answers every waiting request) before the next
phase; the service is stopped and its data dir removed whatever happens.
"""

import threading
import time

import benchlib
from benchlib import median, percentile, request

PACE = 0.02
ROUNDS = 5


def run(args, profile, smoke=False):
    waiters, requests = args.waiters, args.requests
    writes = max(requests // 4, 50)
    settle = 0.2 if smoke else 1.0  # seconds for the service to take in the readers' requests
    load = benchlib.loadavg()
    # Every reader must be let wait: the feed's cap of waiters (64) is raised to their number.
    env = {"HOST_MANAGER_TEST_FEED_MAX_WAITERS": str(max(waiters, 64))}
    with benchlib.Service(benchlib.build(profile), env=env) as service:
        sock = service.connect(timeout=60)
        host = request(sock, "POST", "/api/hosts", {
            "name": "feed", "hostname": "feed.example.com", "port": 22, "username": "u",
            "auth": {"type": "agent"}})
        host_path = f"/api/hosts/{host['id']}"
        _latencies(sock, "GET", host_path, 200)  # warm-up

        reads_alone, reads_held, writes_alone, writes_followed = [], [], [], []
        for _ in range(ROUNDS):
            reads_alone += _latencies(sock, "GET", host_path, requests // ROUNDS)
            writes_alone += _latencies(sock, "PUT", host_path, writes // ROUNDS, lambda i: {"notes": f"a{i}"})
            readers = _start_readers(service, waiters, _newest(sock), settle)
            threads, rss, descriptors = service.status()
            reads_held += _latencies(sock, "GET", host_path, requests // ROUNDS)
            writes_followed += _latencies(sock, "PUT", host_path, writes // ROUNDS, lambda i: {"notes": f"b{i}"})
            _stop_readers(readers, sock, host_path)

        sock.close()
        with service.connect(timeout=60) as sock:
            many, many_missing = _delivery(service, sock, host_path, waiters, writes, settle)
        with service.connect(timeout=60) as sock:
            one, one_missing = _delivery(service, sock, host_path, 1, writes, settle)

    def row(name, alone, loaded):
        a, b = median(alone), median(loaded)
        print(f"{name:<40} {a:8.3f} ms {b:8.3f} ms   ratio {b / a:5.2f}"
              f"   (p99 {percentile(alone, 0.99):.3f} / {percentile(loaded, 0.99):.3f} ms)")

    print(f"command: {benchlib.command_line()}")
    print(f"load average before the run: {load} (2 cores shared with other work)")
    print(f"service with {waiters} waiting readers: {threads} threads, {rss} MiB RSS, {descriptors} descriptors")
    print(f"{'':<40} {'alone':>11} {'with readers':>14}")
    row(f"GET host, {requests} reads", reads_alone, reads_held)
    row(f"PUT host, {writes} writes (each wakes all)", writes_alone, writes_followed)
    for name, samples, missing in [(f"{waiters} readers", many, many_missing), ("1 reader", one, one_missing)]:
        print(f"delivery after the write's answer, {name}: median {median(samples):.2f} ms,"
              f" p99 {percentile(samples, 0.99):.2f} ms, max {max(samples):.2f} ms"
              f" ({len(samples)} deliveries, {missing} missing)")


def _latencies(sock, method, path, count, body=None):
    """Milliseconds of `count` requests back to back on `sock`."""
    times = []
    for index in range(count):
        started = time.perf_counter()
        request(sock, method, path, body(index) if body else None)
        times.append((time.perf_counter() - started) * 1000)
    return times


class _Reader(threading.Thread):
    """Follows the feed on its own connection with 30 s waits; records when each seq came."""

    def __init__(self, service, since):
        super().__init__(daemon=True)
        # Connected in run(), right before its first request: a connection left unused while
        # hundreds of others open may be closed to make room (docs/security.md, "Threat model of the
        # HTTP layer").
        self.service = service
        self.sock = None
        self.since = since
        self.arrived = {}
        self.stopping = False
        self.asked = threading.Event()

    def run(self):
        self.sock = self.service.connect(timeout=60)
        while not self.stopping:
            self.asked.set()
            try:
                page = request(self.sock, "GET", f"/api/changes?since={self.since}&wait=30")
            except OSError:
                return
            now = time.perf_counter()
            for item in page["items"]:
                self.arrived[item["seq"]] = now
            self.since = page["next"]


def _start_readers(service, count, since, settle):
    readers = [_Reader(service, since) for _ in range(count)]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.asked.wait(30)
    # Each reader has sent its request; give the service a moment to take them all in.
    time.sleep(settle)
    return readers


def _stop_readers(readers, sock, host_path):
    """Ends the readers with one more write (it answers every waiting request), so no
    request is left waiting in the service for the next phase."""
    for reader in readers:
        reader.stopping = True
    request(sock, "PUT", host_path, {"notes": "stop"})
    for reader in readers:
        reader.join(60)
        if reader.sock is not None:
            reader.sock.close()


def _newest(sock):
    return request(sock, "GET", "/api/changes")["next"]


def _delivery(service, sock, host_path, count, writes, settle):
    """Latencies (ms) of every (write, reader) pair for `count` readers, and how many of the
    pairs never arrived within 30 s."""
    since = _newest(sock)
    readers = _start_readers(service, count, since, settle)
    answered = []
    for index in range(writes):
        request(sock, "PUT", host_path, {"notes": f"delivery {index}"})
        answered.append(time.perf_counter())
        time.sleep(PACE)
    deadline = time.time() + 30
    last = since + writes
    while time.time() < deadline and not all(last in reader.arrived for reader in readers):
        time.sleep(0.05)
    samples, missing = [], 0
    for reader in readers:
        for index, at in enumerate(answered):
            arrived = reader.arrived.get(since + 1 + index)
            if arrived is None:
                missing += 1
            else:
                samples.append((arrived - at) * 1000)
    # A fresh connection: waiting for many readers can outlast the writer's idle timeout.
    with service.connect(timeout=60) as fresh:
        _stop_readers(readers, fresh, host_path)
    return samples, missing
