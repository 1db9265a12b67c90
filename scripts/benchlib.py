"""The shared pieces of scripts/bench and the other scripts: build, start the real service,
talk HTTP, run wrk, and the figures' arithmetic.

Invariants:
- One launcher: `Service` starts a binary that prints `SERVICE_PORT=<port>` first (the
  service, or the reference server of examples/), on a fresh temporary data dir unless given
  one, and stops it and removes everything it made on exit, on an error, on Ctrl+C (SIGINT)
  and on SIGTERM (`install_signal_handlers`, then every `Service` and `scratch` dir still
  alive is cleaned up at exit).
- Nothing here measures a quantity or prints a figure: the sub-commands in
  scripts/benchmarks/ do; this module only gives them clocks and clients.
- Standard library only: nothing to install for the scripts themselves.
"""

import atexit
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEALTH = b"GET /api/health HTTP/1.1\r\nHost: localhost\r\n\r\n"

_live_children = []
_live_dirs = []
_built = {}


def fail(message):
    """Ends the run with `message` on stderr (exit status 1); clean-up still runs."""
    sys.exit(f"{os.path.basename(sys.argv[0])}: {message}")


def log(message):
    """Progress for the person waiting, on stderr, so stdout holds only the figures."""
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- process and clean-up

def install_signal_handlers():
    """SIGTERM ends the run like Ctrl+C does: by unwinding, so every `with` and `finally`
    stops its service. The atexit hook catches whatever is left."""
    def interrupted(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, interrupted)


def _clean_up():
    for child in list(_live_children):
        if child.poll() is None:
            child.kill()
            child.wait()
    for folder in list(_live_dirs):
        shutil.rmtree(folder, ignore_errors=True)


atexit.register(_clean_up)


def adopt(child):
    """Puts a process started outside `Service` (nginx, Syncthing) under the same clean-up:
    killed at exit if still running. Returns `child`."""
    _live_children.append(child)
    return child


def release(child):
    """The process has been stopped by its owner: the exit hook leaves it alone."""
    if child in _live_children:
        _live_children.remove(child)


def scratch(prefix="hm-bench-"):
    """A new temporary directory, removed at exit whatever happens; `forget` removes it sooner."""
    folder = tempfile.mkdtemp(prefix=prefix)
    _live_dirs.append(folder)
    return folder


def forget(folder):
    shutil.rmtree(folder, ignore_errors=True)
    if folder in _live_dirs:
        _live_dirs.remove(folder)


def build(profile="release", example=None):
    """cargo build of the service (or an example) in `profile` ("release" or "dev"), once per
    run; returns the binary's path."""
    key = (profile, example)
    if key not in _built:
        args = ["cargo", "build", "--locked", "--quiet"]
        if profile == "release":
            args.append("--release")
        if example:
            args += ["--example", example]
        subprocess.run(args, cwd=ROOT, check=True)
        folder = os.path.join(ROOT, "target", "release" if profile == "release" else "debug")
        _built[key] = os.path.join(folder, "examples", example) if example else os.path.join(folder, "host-manager")
    return _built[key]


class Service:
    """A running service (or any binary that prints SERVICE_PORT=<port> first).

    `data_dir=None` gives the service a fresh data dir in a scratch folder of its own
    (`data_dir=False`: no --data-dir at all, for the reference server); `start_ms` is the time
    from spawn to the SERVICE_PORT line. stderr goes to a file in that folder and its tail is
    shown when the start fails."""

    def __init__(self, binary, args=(), data_dir=None, env=None):
        self.own_dir = scratch("hm-service-")
        self.data_dir = os.path.join(self.own_dir, "data") if data_dir is None else data_dir
        argv = [binary] + (["--data-dir", self.data_dir] if self.data_dir else []) + list(args)
        self.stderr_path = os.path.join(self.own_dir, "stderr")
        started = time.perf_counter()
        with open(self.stderr_path, "ab") as stderr:
            self.child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                          env=dict(os.environ, **(env or {})))
        _live_children.append(self.child)
        line = self.child.stdout.readline().decode().strip()
        self.start_ms = (time.perf_counter() - started) * 1000
        if not line.startswith("SERVICE_PORT="):
            tail = self.stderr_tail()
            self.stop()
            fail(f"{binary} printed {line!r} instead of SERVICE_PORT; its stderr ends:\n{tail}")
        self.port = int(line.split("=", 1)[1])
        self.pid = self.child.pid

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def connect(self, timeout=10):
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout)

    def status(self):
        """(threads, RSS in MiB, open descriptors) of the process, from /proc."""
        fields = proc_status(self.pid)
        descriptors = len(os.listdir(f"/proc/{self.pid}/fd"))
        return int(fields["Threads"]), kib(fields["VmRSS"]) // 1024, descriptors

    def proc_status(self):
        return proc_status(self.pid)

    def stderr_tail(self, lines=20):
        with open(self.stderr_path, errors="replace") as stderr:
            return "".join(stderr.readlines()[-lines:])

    def kill(self):
        """SIGKILL, as a crash: the data dir stays as the kill left it."""
        if self.child.poll() is None:
            self.child.send_signal(signal.SIGKILL)
            self.child.wait()
        self._forget_child()

    def stop(self):
        """SIGTERM (a clean stop), SIGKILL after 10 s; then the scratch folder goes."""
        if self.child.poll() is None:
            self.child.terminate()
            try:
                self.child.wait(10)
            except subprocess.TimeoutExpired:
                self.child.kill()
                self.child.wait()
        self._forget_child()
        forget(self.own_dir)

    def _forget_child(self):
        if self.child in _live_children:
            _live_children.remove(self.child)


def proc_status(pid):
    """/proc/PID/status as a dict of its fields."""
    fields = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            fields[name] = value.strip()
    return fields


def kib(field):
    """The number of a /proc status field such as `VmRSS:  1234 kB`."""
    return int(field.split()[0])


class Nginx:
    """nginx (Debian package) with one worker and keep-alive, answering `path` with `body`:
    the ceiling the service's HTTP figures are compared with, started like `Service`."""

    CONFIG = """
worker_processes 1;
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log error;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 60s;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location = {path} {{
            default_type application/json;
            return 200 '{body}';
        }}
    }}
}}
"""

    def __init__(self, path, body):
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        if not os.path.exists(binary):
            install_debian("nginx")
        self.prefix = scratch("hm-nginx-")
        os.chmod(self.prefix, 0o755)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        config = os.path.join(self.prefix, "nginx.conf")
        with open(config, "w") as file:
            file.write(self.CONFIG.format(prefix=self.prefix, port=self.port, path=path,
                                          body=body.decode().replace("'", "\\'")))
        self.child = subprocess.Popen([binary, "-p", self.prefix, "-c", config],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _live_children.append(self.child)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.02)
        else:
            self.stop()
            fail("nginx did not start listening")
        self.pid = self.child.pid

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        if self.child.poll() is None:
            self.child.terminate()
            self.child.wait(10)
        if self.child in _live_children:
            _live_children.remove(self.child)
        forget(self.prefix)


def install_debian(*packages):
    """apt-get install (as root), with one apt-get update when the first try fails."""
    if os.geteuid() != 0:
        fail(f"missing {' '.join(packages)}: apt-get install {' '.join(packages)}")
    log(f"installing {' '.join(packages)} (Debian packages)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if subprocess.run(["apt-get", "install", "-y", "-qq", *packages], env=env,
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], env=env, check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", *packages], env=env, check=True,
                       stdout=subprocess.DEVNULL)


def need(command, package):
    """Installs `package` when `command` is not on PATH."""
    if not shutil.which(command):
        install_debian(package)


# ---------------------------------------------------------------- HTTP clients

def read_response(sock):
    """Reads one response framed by Content-Length; returns (status, body bytes)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before a response")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed inside a body")
        body += chunk
    return int(lines[0].split()[1]), body


def request(sock, method, path, body=None):
    """One request on a raw keep-alive socket (the least client-side work per request);
    returns the parsed JSON answer. Any status from 300 on ends the run."""
    payload = b"" if body is None else json.dumps(body).encode()
    head = f"{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {len(payload)}\r\n\r\n"
    sock.sendall(head.encode() + payload)
    status, answer = read_response(sock)
    if status >= 300:
        fail(f"{method} {path} answered {status}: {answer[:300]!r}")
    return json.loads(answer) if answer else None


class Client:
    """One keep-alive python3 http.client connection to 127.0.0.1:`port`."""

    def __init__(self, port, timeout=60):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        self.headers = {"Host": f"127.0.0.1:{port}", "Content-Type": "application/json"}

    def send(self, method, path, body=None, raw=False):
        """Returns (milliseconds, status, answer bytes). `raw`: `body` is bytes sent as they
        are, not a value to encode as JSON."""
        payload = body if raw else (json.dumps(body) if body is not None else None)
        started = time.perf_counter()
        self.conn.request(method, path, body=payload, headers=self.headers)
        response = self.conn.getresponse()
        data = response.read()
        return (time.perf_counter() - started) * 1000, response.status, data

    def timed(self, method, path, body=None, expect=200, raw=False):
        """Returns (milliseconds, answer bytes); a status other than `expect` ends the run."""
        elapsed, status, data = self.send(method, path, body, raw)
        if status != expect:
            fail(f"{method} {path} answered {status}: {data[:300]!r}")
        return elapsed, data

    def json(self, method, path, body=None, expect=200):
        """The answer parsed (None for an empty one)."""
        data = self.timed(method, path, body, expect)[1]
        return json.loads(data) if data else None

    def close(self):
        self.conn.close()


def call(port, method, path, body=None, expect=200, timeout=60):
    """One request on a new connection, closed after it; returns the parsed answer."""
    client = Client(port, timeout)
    try:
        return client.json(method, path, body, expect)
    finally:
        client.close()


# ---------------------------------------------------------------- wrk

UNIT = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def wrk(port, path, threads, connections, seconds, script=None, cpu=None):
    """One wrk run with --latency: p50 and p99 (ms), req/s, requests, and its failures by
    kind (non-2xx, and socket errors; "timeout" is no answer within wrk's 2 s). `cpu`: run
    wrk on that core only (see `pin`)."""
    command = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency"]
    if cpu is not None:
        command = ["taskset", "-c", str(cpu)] + command
    if script:
        command += ["-s", script]
    command.append(f"http://127.0.0.1:{port}{path}")
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    percent = {m.group(1): float(m.group(2)) * UNIT[m.group(3)]
               for m in re.finditer(r"^\s+(50|75|90|99)%\s+([0-9.]+)(us|ms|s)\s*$", out, re.M)}
    rps = float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1))
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    failed = {"non-2xx": int(bad.group(1)) if bad else 0}
    if errors:
        failed.update(zip(["connect", "read", "write", "timeout"], (int(x) for x in errors.groups())))
    return {"p50": percent["50"], "p99": percent["99"], "rps": rps, "requests": requests,
            "failed": {kind: count for kind, count in failed.items() if count}}


def pin(pid, cpus):
    """Binds every thread of process `pid` to the cores `cpus` (a taskset list such as "0" or
    "0,1"); threads it starts later inherit the binding. For comparisons on equal CPU: two
    servers measured on one core each, with the load tool on another."""
    subprocess.run(["taskset", "-a", "-p", "-c", cpus, str(pid)], check=True,
                   stdout=subprocess.DEVNULL)


def failures(*runs):
    """The failures of wrk runs added up, as text ("" when none)."""
    total = {}
    for run in runs:
        for kind, count in run["failed"].items():
            total[kind] = total.get(kind, 0) + count
    return ", ".join(f"{count} {kind}" for kind, count in total.items())


# ---------------------------------------------------------------- figures

def percentile(values, share):
    """The value at `share` (0.99: p99) of the sorted values, nearest rank from below."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def median(values):
    return statistics.median(values)


def timed(call):
    """Runs `call` and returns its wall time in milliseconds."""
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def loadavg():
    """The 1, 5 and 15 minute load averages, as text."""
    with open("/proc/loadavg") as file:
        return " ".join(file.read().split()[:3])


def cpu_model():
    with open("/proc/cpuinfo") as cpuinfo:
        return next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), "?")


def command_line(env_names=()):
    """The exact command of this run, with the named environment variables that are set."""
    env = " ".join(f"{name}={os.environ[name]}" for name in env_names if name in os.environ)
    command = " ".join([os.path.relpath(os.path.abspath(sys.argv[0]), ROOT)] + sys.argv[1:])
    return f"{env} {command}" if env else command
