-- Schema: identities, group defaults, and host fields that inherit (docs/identities.md).
--
-- An identity is a named credential set (a username and ordered ways to authenticate) that
-- hosts and groups refer to, so a shared password is changed once. A group carries optional
-- defaults; a host field that is NULL takes its value from the nearest level that sets it
-- (the host's identity, then each group up the tree with its own identity), else the
-- built-in default. This file therefore makes a host's port, username and auth nullable,
-- which SQLite can only do by rebuilding the table (its documented twelve steps; the
-- migration runs with foreign keys off and checks them before it commits, see
-- store/migrate.rs).

CREATE TABLE identities (
    id              TEXT PRIMARY KEY NOT NULL,
    name            TEXT NOT NULL,
    name_key        TEXT NOT NULL,
    -- Unique: the caseless match key (model/fold.rs), as key names have.
    fold_key        TEXT NOT NULL UNIQUE,
    username        TEXT,
    -- TOTP: the sealed secret and its settings, all NULL when the identity has none.
    totp_secret     BLOB,
    totp_digits     INTEGER CHECK (totp_digits BETWEEN 6 AND 8),
    totp_period     INTEGER CHECK (totp_period >= 1),
    totp_algorithm  TEXT CHECK (totp_algorithm IN ('SHA1', 'SHA256', 'SHA512')),
    notes           TEXT NOT NULL DEFAULT '',
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    revision        INTEGER NOT NULL DEFAULT 1
);

-- An identity's ways to authenticate, in the order a client tries them. A key method names
-- a stored key (so the key cannot be deleted while used); a password method holds the
-- sealed password.
CREATE TABLE identity_methods (
    identity_id  TEXT NOT NULL REFERENCES identities(id) ON DELETE CASCADE,
    position     INTEGER NOT NULL,
    type         TEXT NOT NULL
        CHECK (type IN ('key', 'password', 'agent', 'keyboard_interactive')),
    key_id       TEXT REFERENCES keys(id),
    password     BLOB,
    PRIMARY KEY (identity_id, position)
) WITHOUT ROWID;
CREATE INDEX identity_methods_by_key ON identity_methods (key_id);

-- The keyboard-interactive answer rules, in order: a prompt pattern and what answers it
-- (the identity's password, its current TOTP code, or a sealed literal text).
CREATE TABLE identity_answers (
    identity_id  TEXT NOT NULL REFERENCES identities(id) ON DELETE CASCADE,
    position     INTEGER NOT NULL,
    prompt       TEXT NOT NULL,
    answer       TEXT NOT NULL CHECK (answer IN ('password', 'totp', 'literal')),
    literal      BLOB,
    PRIMARY KEY (identity_id, position)
) WITHOUT ROWID;

CREATE TRIGGER identities_created AFTER INSERT ON identities BEGIN
    INSERT INTO changes (at, kind, id, op)
        VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'identity', new.id, 'created');
END;
CREATE TRIGGER identities_changed AFTER UPDATE OF updated_at ON identities BEGIN
    UPDATE identities SET revision = revision + 1 WHERE id = new.id;
    INSERT INTO changes (at, kind, id, op)
        VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'identity', new.id, 'updated');
END;
CREATE TRIGGER identities_deleted AFTER DELETE ON identities BEGIN
    INSERT INTO changes (at, kind, id, op)
        VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'identity', old.id, 'deleted');
END;

-- Group defaults (docs/identities.md, "Group defaults"); NULL: unset. The chain and the
-- options are JSON arrays of host ids and of directives: a default chain `[]` ("connect
-- directly") differs from none (NULL). A host a default chain names cannot be deleted: the
-- API checks these arrays as it checks `host_jumps`.
ALTER TABLE groups ADD COLUMN default_username TEXT;
ALTER TABLE groups ADD COLUMN default_port INTEGER CHECK (default_port BETWEEN 1 AND 65535);
ALTER TABLE groups ADD COLUMN default_identity_id TEXT REFERENCES identities(id);
ALTER TABLE groups ADD COLUMN default_jump_host_ids TEXT;
ALTER TABLE groups ADD COLUMN default_ssh_options TEXT NOT NULL DEFAULT '[]';
CREATE INDEX groups_by_default_identity ON groups (default_identity_id);

-- The hosts table again, with port, username and auth_type nullable (NULL: inherit), the
-- identity reference, and `jumps_set` (0: the chain is inherited; 1: the host's own chain,
-- which may be empty). Every existing host keeps its own values and its own chain.
CREATE TABLE hosts_rebuilt (
    seq           INTEGER PRIMARY KEY,
    id            TEXT NOT NULL UNIQUE,
    name          TEXT NOT NULL,
    name_key      TEXT NOT NULL,
    hostname      TEXT NOT NULL,
    port          INTEGER CHECK (port BETWEEN 1 AND 65535),
    username      TEXT,
    auth_type     TEXT CHECK (auth_type IN ('password', 'key', 'agent')),
    key_id        TEXT REFERENCES keys(id),
    password      BLOB,                 -- sealed by the vault; NULL when none is stored
    group_id      TEXT REFERENCES groups(id),
    is_favorite   INTEGER NOT NULL DEFAULT 0,
    color         TEXT NOT NULL DEFAULT '',
    sort_order    INTEGER NOT NULL DEFAULT 0,
    notes         TEXT NOT NULL DEFAULT '',
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    last_used_at  TEXT,
    revision      INTEGER NOT NULL DEFAULT 1,
    identity_id   TEXT REFERENCES identities(id),
    jumps_set     INTEGER NOT NULL DEFAULT 1 CHECK (jumps_set IN (0, 1))
);
INSERT INTO hosts_rebuilt (seq, id, name, name_key, hostname, port, username, auth_type,
        key_id, password, group_id, is_favorite, color, sort_order, notes, created_at,
        updated_at, last_used_at, revision)
    SELECT seq, id, name, name_key, hostname, port, username, auth_type, key_id, password,
        group_id, is_favorite, color, sort_order, notes, created_at, updated_at,
        last_used_at, revision
    FROM hosts;
DROP TABLE hosts;
ALTER TABLE hosts_rebuilt RENAME TO hosts;

CREATE INDEX hosts_by_created ON hosts (created_at, id);
CREATE INDEX hosts_by_group_order ON hosts (group_id, sort_order);
CREATE INDEX hosts_by_key ON hosts (key_id);
CREATE INDEX hosts_by_identity ON hosts (identity_id);

-- The triggers of the old table went with it; these are the same (0001_init.sql,
-- 0006_changes.sql).
CREATE TRIGGER hosts_count_insert AFTER INSERT ON hosts WHEN new.group_id IS NOT NULL BEGIN
    INSERT INTO group_host_counts (group_id, host_count) VALUES (new.group_id, 1)
        ON CONFLICT (group_id) DO UPDATE SET host_count = host_count + 1;
END;
CREATE TRIGGER hosts_count_delete AFTER DELETE ON hosts WHEN old.group_id IS NOT NULL BEGIN
    UPDATE group_host_counts SET host_count = host_count - 1 WHERE group_id = old.group_id;
END;
CREATE TRIGGER hosts_count_leave AFTER UPDATE OF group_id ON hosts
    WHEN old.group_id IS NOT NULL AND old.group_id IS NOT new.group_id BEGIN
    UPDATE group_host_counts SET host_count = host_count - 1 WHERE group_id = old.group_id;
END;
CREATE TRIGGER hosts_count_join AFTER UPDATE OF group_id ON hosts
    WHEN new.group_id IS NOT NULL AND old.group_id IS NOT new.group_id BEGIN
    INSERT INTO group_host_counts (group_id, host_count) VALUES (new.group_id, 1)
        ON CONFLICT (group_id) DO UPDATE SET host_count = host_count + 1;
END;
CREATE TRIGGER hosts_created AFTER INSERT ON hosts BEGIN
    INSERT INTO changes (at, kind, id, op)
        VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'host', new.id, 'created');
END;
CREATE TRIGGER hosts_changed AFTER UPDATE OF updated_at ON hosts BEGIN
    UPDATE hosts SET revision = revision + 1 WHERE seq = new.seq;
    INSERT INTO changes (at, kind, id, op)
        VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'host', new.id, 'updated');
END;
CREATE TRIGGER hosts_deleted AFTER DELETE ON hosts BEGIN
    INSERT INTO changes (at, kind, id, op)
        VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'host', old.id, 'deleted');
END;
