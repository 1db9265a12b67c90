"""The one seeder of scripts/bench: the data every sub-command measures on.

Invariants:
- The catalogue (keys, groups, hosts, tags) goes in as the service would leave it: keys
  through POST /api/keys (sealed by the real vault), then groups, hosts and tags through
  plain INSERTs in one transaction while the service is stopped, so the schema's triggers
  keep their counts exactly as the service would. Through the API, 100,000 fsynced creates
  would take minutes.
- Anything whose meaning depends on the API (ssh configs, keys of a given type) goes
  through the API.
- Deterministic: the same sizes give the same rows (seeded random numbers), so two runs
  measure the same data.
"""

import os
import random
import shutil
import sqlite3
import time
import uuid
from datetime import datetime, timedelta, timezone

import benchlib

ROLES = ["web", "db", "cache", "api", "worker", "batch", "proxy", "mail", "git", "ci"]
ENVS = ["prod", "stage", "dev", "test"]


def name_of(n):
    """The catalogue's n-th host name: about 5 hosts share one, every 7th capitalised."""
    name = f"{ROLES[n % 10]}-{ENVS[(n // 10) % 4]}-{(n // 40) % 500:03d}"
    return name.capitalize() if n % 7 == 0 else name


def hostname_of(n):
    """The catalogue's n-th hostname: a DNS name, or an IPv4 address for every 10th."""
    role, env = ROLES[n % 10], ENVS[(n // 10) % 4]
    return f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}" if n % 10 == 9 else f"{role}{n}.{env}.example.com"


def tags_of(n):
    return [ENVS[(n // 10) % 4], ROLES[n % 10], f"team-{n % 40:02d}"]


# Every key type and size the service generates, as (label, POST /api/keys body).
KEY_TYPES = [
    ("ed25519", {"type": "ed25519"}),
    ("ecdsa P-256", {"type": "ecdsa", "bits": 256}),
    ("ecdsa P-384", {"type": "ecdsa", "bits": 384}),
    ("ecdsa P-521", {"type": "ecdsa", "bits": 521}),
    ("rsa 2048", {"type": "rsa", "bits": 2048}),
    ("rsa 3072", {"type": "rsa", "bits": 3072}),
    ("rsa 4096", {"type": "rsa", "bits": 4096}),
    ("ed25519, passphrase stored", {"type": "ed25519", "passphrase": "bench passphrase"}),
]


def create_keys(port, specs):
    """POST /api/keys for each (name, body); returns the answers in order."""
    return [benchlib.call(port, "POST", "/api/keys", dict(body, name=name), 201, timeout=300)
            for name, body in specs]


def ssh_config(blocks, alias=lambda n: f"node-{n}", hostname=lambda n: f"10.{n // 65536}.{n // 256 % 256}.{n % 256}",
               user="deploy", options=True):
    """An ssh config of `blocks` concrete Host blocks. With `options`, each block also has a
    Port, two kept directives (ServerAliveInterval, ForwardAgent), and every 10th a
    ProxyJump through the block before it."""
    lines = []
    for n in range(blocks):
        lines += [f"Host {alias(n)}", f"    HostName {hostname(n)}"]
        if options:
            lines.append(f"    Port {2000 + n % 1000}")
        lines.append(f"    User {user}")
        if options:
            if n % 10 == 9:
                lines.append(f"    ProxyJump {alias(n - 1)}")
            lines += ["    ServerAliveInterval 30", "    ForwardAgent no"]
    return "\n".join(lines) + "\n"


def catalogue(binary, data_dir, hosts, groups, keys):
    """Seeds `data_dir` (made anew) with `keys` ed25519 keys, `groups` groups (10 top-level,
    then group i under group (i - 10) // 5: five levels for 2,000) and `hosts` hosts with 3
    tags each (every 50th ungrouped, a third using one of the keys). Returns (group ids, a
    note on what it seeded and how long it took)."""
    started = time.perf_counter()
    shutil.rmtree(data_dir, ignore_errors=True)
    with benchlib.Service(binary, data_dir=data_dir) as service:
        key_ids = [key["id"] for key in create_keys(
            service.port, [(f"bench key {index:02d}", {"type": "ed25519"}) for index in range(keys)])]
    keys_done = time.perf_counter()

    rng = random.Random(9)
    db = sqlite3.connect(os.path.join(data_dir, "host-manager.db"), isolation_level=None)
    db.execute("PRAGMA foreign_keys = ON")
    # Bench data only: no fsync, and a cache that holds the id index while it fills.
    db.execute("PRAGMA synchronous = OFF")
    db.execute("PRAGMA cache_size = -262144")
    db.execute("BEGIN")
    epoch = datetime(2024, 1, 1, tzinfo=timezone.utc)
    group_ids = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(groups)]
    db.executemany(
        "INSERT INTO groups (id, parent_id, name, name_key, color, icon, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [(gid, None if i < 10 else group_ids[(i - 10) // 5], f"Group {i:04d}", f"group {i:04d}",
          "#336699" if i % 3 == 0 else "", "server" if i % 2 == 0 else "", _stamp(epoch), _stamp(epoch))
         for i, gid in enumerate(group_ids)])
    db.executemany(
        "INSERT INTO hosts (seq, id, name, name_key, hostname, port, username, auth_type, key_id,"
        " group_id, is_favorite, color, sort_order, notes, created_at, updated_at, last_used_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        _host_rows(hosts, group_ids, key_ids, rng, epoch))
    # Streamed from generators: a million hosts never sit in python's memory.
    db.executemany("INSERT INTO host_tags (host_seq, tag, position) VALUES (?, ?, ?)",
                   ((n + 1, tag, position) for n in range(hosts) for position, tag in enumerate(tags_of(n))))
    db.execute("COMMIT")
    counted = db.execute("SELECT coalesce(sum(host_count), 0) FROM group_host_counts").fetchone()[0]
    total_hosts = db.execute("SELECT count(*) FROM hosts").fetchone()[0]
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    grouped = sum(1 for n in range(hosts) if n % 50 != 0)
    if total_hosts != hosts:
        benchlib.fail(f"the hosts table holds {total_hosts} hosts, seeded {hosts}")
    if counted != grouped:
        benchlib.fail(f"group_host_counts says {counted} grouped hosts, seeded {grouped}")
    size = os.path.getsize(os.path.join(data_dir, "host-manager.db"))
    note = (f"seed ({hosts:,} hosts): {keys} ed25519 keys through POST /api/keys in "
            f"{keys_done - started:.1f} s; {groups} groups, {hosts} hosts, {hosts * 3} tags through "
            f"python3 sqlite3 INSERTs (triggers keep group_host_counts) in "
            f"{time.perf_counter() - keys_done:.1f} s; database {size / 1e6:.0f} MB")
    return group_ids, note


def _stamp(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _host_rows(hosts, group_ids, key_ids, rng, epoch):
    orders = {}
    for n in range(hosts):
        name, hostname = name_of(n), hostname_of(n)
        group = None if n % 50 == 0 or not group_ids else group_ids[n % len(group_ids)]
        order = orders.get(group, 0)
        orders[group] = order + 1
        created = epoch + timedelta(milliseconds=n * 60_000 + rng.randrange(1000))
        used = _stamp(created + timedelta(days=rng.randrange(1, 300))) if n % 10 < 3 else None
        auth, key = ("key", key_ids[n % len(key_ids)]) if n % 3 == 0 and key_ids else ("agent", None)
        text = (f"Runbook: https://wiki.example.com/{ROLES[n % 10]} " + "x" * rng.randrange(50, 250)
                if n % 10 == 0 else "")
        yield (n + 1, str(uuid.UUID(int=rng.getrandbits(128), version=4)), name, name.lower(),
               hostname, 22 if n % 3 else 2222, "deploy", auth, key, group,
               1 if n % 20 == 0 else 0, "", order, text, _stamp(created), _stamp(created), used)
