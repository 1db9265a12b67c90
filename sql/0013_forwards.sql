-- Schema: port-forward rules, a host's startup command and environment, and a group's
-- default environment (docs/forwards.md).
--
-- The directives these replace (`LocalForward`, `SetEnv`, ...) used to be kept verbatim in
-- `host_ssh_options` and `groups.default_ssh_options`; store/migrate.rs moves them into these
-- tables and columns right after this file runs, in the same transaction.

-- A rule belongs to one host or to one group (whose hosts inherit it), in order.
CREATE TABLE forwards (
    id             TEXT PRIMARY KEY NOT NULL,
    host_id        TEXT REFERENCES hosts(id) ON DELETE CASCADE,
    group_id       TEXT REFERENCES groups(id) ON DELETE CASCADE,
    position       INTEGER NOT NULL,
    type           TEXT NOT NULL CHECK (type IN ('local', 'remote', 'dynamic')),
    bind_address   TEXT,
    bind_port      INTEGER CHECK (bind_port BETWEEN 0 AND 65535),
    bind_socket    TEXT,
    target_host    TEXT,
    target_port    INTEGER CHECK (target_port BETWEEN 1 AND 65535),
    target_socket  TEXT,
    enabled        INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    autostart      INTEGER NOT NULL DEFAULT 1 CHECK (autostart IN (0, 1)),
    description    TEXT NOT NULL DEFAULT '',
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL,
    revision       INTEGER NOT NULL DEFAULT 1,
    CHECK ((host_id IS NULL) <> (group_id IS NULL)),
    CHECK ((bind_port IS NULL) <> (bind_socket IS NULL))
);
CREATE INDEX forwards_by_host ON forwards (host_id, position);
CREATE INDEX forwards_by_group ON forwards (group_id, position);
-- The port-conflict check (docs/forwards.md) looks only at rules that start by themselves.
CREATE INDEX forwards_listening ON forwards (bind_port) WHERE enabled = 1 AND autostart = 1;

CREATE TRIGGER forwards_created AFTER INSERT ON forwards BEGIN
    INSERT INTO changes (at, kind, id, op)
        VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'forward', new.id, 'created');
END;
CREATE TRIGGER forwards_changed AFTER UPDATE OF updated_at ON forwards BEGIN
    UPDATE forwards SET revision = revision + 1 WHERE id = new.id;
    INSERT INTO changes (at, kind, id, op)
        VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'forward', new.id, 'updated');
END;
CREATE TRIGGER forwards_deleted AFTER DELETE ON forwards BEGIN
    INSERT INTO changes (at, kind, id, op)
        VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'forward', old.id, 'deleted');
END;

-- A host's startup command and environment as one JSON object:
-- {"remote_command", "request_tty", "set_env": [{"name", "value"} | {"name", "secret": true}],
--  "send_env": [pattern]}; `{}` is none of them. A secret value is never here: it is sealed
-- in `env_secrets`.
ALTER TABLE hosts ADD COLUMN startup TEXT NOT NULL DEFAULT '{}';
-- A group's default environment, as JSON arrays of the same shapes.
ALTER TABLE groups ADD COLUMN default_set_env TEXT NOT NULL DEFAULT '[]';
ALTER TABLE groups ADD COLUMN default_send_env TEXT NOT NULL DEFAULT '[]';

-- The sealed value of each secret `set_env` entry, by its owner (a host or a group) and name.
CREATE TABLE env_secrets (
    host_id   TEXT REFERENCES hosts(id) ON DELETE CASCADE,
    group_id  TEXT REFERENCES groups(id) ON DELETE CASCADE,
    name      TEXT NOT NULL,
    sealed    BLOB NOT NULL,
    CHECK ((host_id IS NULL) <> (group_id IS NULL))
);
CREATE UNIQUE INDEX env_secrets_by_owner ON env_secrets (coalesce(host_id, group_id), name);
CREATE INDEX env_secrets_by_group ON env_secrets (group_id);
CREATE INDEX env_secrets_by_host ON env_secrets (host_id);
