-- Schema: the change log behind GET /api/changes, revisions for optimistic concurrency, and
-- the connection history (README: "Change feed", "Revisions and If-Match", "Connection
-- history").
--
-- Every row change of hosts, groups, keys and known-hosts entries is logged by the triggers
-- below, inside the statement (so the transaction) that makes it: a write and its entries
-- commit or roll back together, and no write path (the API, an import, a group delete moving
-- hosts, a later migration) can forget one. A change is a statement that sets `updated_at`:
-- every edit does that exactly once per row, and nothing else does (`connect` sets only
-- `last_used_at`; a host's names, password, tags and chain are written in the same
-- transaction as its one `updated_at`), so each edit of a resource is one entry and one
-- revision. Known-hosts entries are added and deleted, never edited (a verify only moves
-- `last_seen`). Vault events are not rows: store/changes.rs records them.

-- Bumped by the `*_changed` triggers, once per edit; the ETag of a single-resource answer.
ALTER TABLE hosts ADD COLUMN revision INTEGER NOT NULL DEFAULT 1;
ALTER TABLE groups ADD COLUMN revision INTEGER NOT NULL DEFAULT 1;
ALTER TABLE keys ADD COLUMN revision INTEGER NOT NULL DEFAULT 1;

-- One entry per changed resource. AUTOINCREMENT: a `seq` is never given twice, also after
-- the newest entries were trimmed or the service restarted, so a reader's cursor never
-- points at another entry than the one it saw. Entries name a resource, never a value.
CREATE TABLE changes (
    seq   INTEGER PRIMARY KEY AUTOINCREMENT,
    at    TEXT NOT NULL,
    kind  TEXT NOT NULL,
    id    TEXT NOT NULL,
    op    TEXT NOT NULL
);

-- How much of each log is kept (set by the service at start, README "Change feed" and
-- "History"), and the newest change `seq` trimmed so far: a reader whose cursor is below it
-- missed entries and is told to reload.
CREATE TABLE log_retention (
    id                       INTEGER PRIMARY KEY CHECK (id = 1),
    changes_kept             INTEGER NOT NULL CHECK (changes_kept >= 1),
    changes_trimmed_through  INTEGER NOT NULL DEFAULT 0,
    history_kept             INTEGER NOT NULL CHECK (history_kept >= 1)
);
INSERT INTO log_retention (id, changes_kept, history_kept) VALUES (1, 10000, 10000);

CREATE TRIGGER changes_trim AFTER INSERT ON changes
    WHEN new.seq - (SELECT changes_kept FROM log_retention WHERE id = 1)
        > (SELECT changes_trimmed_through FROM log_retention WHERE id = 1)
BEGIN
    DELETE FROM changes
        WHERE seq <= new.seq - (SELECT changes_kept FROM log_retention WHERE id = 1);
    UPDATE log_retention SET changes_trimmed_through = new.seq - changes_kept WHERE id = 1;
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

CREATE TRIGGER groups_created AFTER INSERT ON groups BEGIN
    INSERT INTO changes (at, kind, id, op)
        VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'group', new.id, 'created');
END;
CREATE TRIGGER groups_changed AFTER UPDATE OF updated_at ON groups BEGIN
    UPDATE groups SET revision = revision + 1 WHERE id = new.id;
    INSERT INTO changes (at, kind, id, op)
        VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'group', new.id, 'updated');
END;
CREATE TRIGGER groups_deleted AFTER DELETE ON groups BEGIN
    INSERT INTO changes (at, kind, id, op)
        VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'group', old.id, 'deleted');
END;

CREATE TRIGGER keys_created AFTER INSERT ON keys BEGIN
    INSERT INTO changes (at, kind, id, op)
        VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'key', new.id, 'created');
END;
CREATE TRIGGER keys_changed AFTER UPDATE OF updated_at ON keys BEGIN
    UPDATE keys SET revision = revision + 1 WHERE id = new.id;
    INSERT INTO changes (at, kind, id, op)
        VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'key', new.id, 'updated');
END;
CREATE TRIGGER keys_deleted AFTER DELETE ON keys BEGIN
    INSERT INTO changes (at, kind, id, op)
        VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'key', old.id, 'deleted');
END;

CREATE TRIGGER known_hosts_created AFTER INSERT ON known_hosts BEGIN
    INSERT INTO changes (at, kind, id, op)
        VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'known_host', new.id, 'created');
END;
CREATE TRIGGER known_hosts_deleted AFTER DELETE ON known_hosts BEGIN
    INSERT INTO changes (at, kind, id, op)
        VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'known_host', old.id, 'deleted');
END;

-- Each `connect`, newest kept: what was connected to, as it was then (a later rename or
-- edit does not rewrite history). A host's entries go with the host. Never a credential.
CREATE TABLE connection_history (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    host_id       TEXT NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    hostname      TEXT NOT NULL,
    port          INTEGER NOT NULL,
    username      TEXT NOT NULL,
    auth_type     TEXT NOT NULL,
    connected_at  TEXT NOT NULL
);
-- A host's history page, and the cascade when the host goes, are one index range.
CREATE INDEX connection_history_by_host ON connection_history (host_id, seq);

CREATE TRIGGER connection_history_appended AFTER INSERT ON connection_history BEGIN
    DELETE FROM connection_history
        WHERE seq <= new.seq - (SELECT history_kept FROM log_retention WHERE id = 1);
    INSERT INTO changes (at, kind, id, op)
        VALUES (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'history', new.host_id, 'created');
END;
