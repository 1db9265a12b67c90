"""Shared pieces of the benchmark scripts: build, start the real service, talk raw HTTP.

One launcher for every script: `Service` starts target/<profile>/host-manager on a fresh
temporary data dir (or a given one), reads SERVICE_PORT from stdout, and stops and cleans up
on exit (also on Ctrl+C). Nothing here measures; the scripts do.
"""

import os
import shutil
import socket
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEALTH = b"GET /api/health HTTP/1.1\r\nHost: localhost\r\n\r\n"


def build(profile="release", example=None):
    """cargo build of the service (or an example) in `profile`; returns the binary's path."""
    args = ["cargo", "build", "--locked", "--quiet"]
    if profile == "release":
        args.append("--release")
    if example:
        args += ["--example", example]
    subprocess.run(args, cwd=ROOT, check=True)
    folder = "release" if profile == "release" else "debug"
    if example:
        return os.path.join(ROOT, "target", folder, "examples", example)
    return os.path.join(ROOT, "target", folder, "host-manager")


class Service:
    """A running service (or any binary that prints SERVICE_PORT=<port> first)."""

    def __init__(self, binary, args=(), data_dir=None, env=None, stderr=None):
        self.own_dir = None
        if data_dir is None and os.path.basename(binary) == "host-manager":
            self.own_dir = tempfile.mkdtemp(prefix="hm-bench-")
            data_dir = os.path.join(self.own_dir, "data")
        argv = [binary] + (["--data-dir", data_dir] if data_dir else []) + list(args)
        self.child = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=stderr if stderr is not None else subprocess.DEVNULL,
            env=dict(os.environ, **(env or {})))
        line = self.child.stdout.readline().decode().strip()
        if not line.startswith("SERVICE_PORT="):
            self.stop()
            raise RuntimeError(f"{binary} printed {line!r} instead of SERVICE_PORT")
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
        fields = dict(line.split(":", 1) for line in open(f"/proc/{self.pid}/status") if ":" in line)
        descriptors = len(os.listdir(f"/proc/{self.pid}/fd"))
        return int(fields["Threads"]), int(fields["VmRSS"].split()[0]) // 1024, descriptors

    def stop(self):
        if self.child.poll() is None:
            self.child.terminate()
            try:
                self.child.wait(10)
            except subprocess.TimeoutExpired:
                self.child.kill()
                self.child.wait()
        if self.own_dir:
            shutil.rmtree(self.own_dir, ignore_errors=True)
            self.own_dir = None


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


def timed(call):
    """Runs `call` and returns its wall time in milliseconds."""
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


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
        import shutil as _shutil
        binary = _shutil.which("nginx") or "/usr/sbin/nginx"
        if not os.path.exists(binary):
            install_debian("nginx")
        self.prefix = tempfile.mkdtemp(prefix="hm-nginx-")
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
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.02)
        else:
            self.stop()
            raise RuntimeError("nginx did not start listening")
        self.pid = self.child.pid

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        if self.child.poll() is None:
            self.child.terminate()
            self.child.wait(10)
        shutil.rmtree(self.prefix, ignore_errors=True)


def install_debian(*packages):
    """apt-get install (as root), with one apt-get update when the first try fails."""
    if os.geteuid() != 0:
        raise RuntimeError(f"missing {' '.join(packages)}: apt-get install {' '.join(packages)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if subprocess.run(["apt-get", "install", "-y", "-qq", *packages], env=env,
                      stdout=subprocess.DEVNULL).returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], env=env, check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", *packages], env=env, check=True,
                       stdout=subprocess.DEVNULL)
