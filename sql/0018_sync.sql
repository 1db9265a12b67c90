-- Schema: sync between a user's machines through a folder a file-sync tool shares
-- (docs/sync.md). None of these tables is catalogue: a snapshot neither holds nor restores
-- them, and no record of them travels in a bundle.

-- This device, made once: its id (a random UUID, the name of its bundle file) and name; the
-- folder and the sync passphrase (sealed by the vault) while sync is set up; the record
-- clock's last packed value (a restart never stamps earlier); and when it last wrote its
-- bundle and merged another's.
CREATE TABLE sync_settings (
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    device_id      TEXT NOT NULL,
    device_name    TEXT NOT NULL,
    dir            TEXT,
    passphrase     BLOB,
    clock          INTEGER NOT NULL DEFAULT 0,
    last_write_at  TEXT,
    last_merge_at  TEXT
);

-- The other devices seen in the folder: what their bundle held when last merged (its live
-- records, for the mass-delete guard) and the file's size and modification time, so an
-- unchanged file is not opened again.
CREATE TABLE sync_peers (
    device_id     TEXT PRIMARY KEY NOT NULL,
    device_name   TEXT NOT NULL,
    last_seen_at  TEXT NOT NULL,
    records       INTEGER NOT NULL
) WITHOUT ROWID;

-- Files read and what they were when read (`size:mtime`); a file that changes is read again.
CREATE TABLE sync_files (
    name   TEXT PRIMARY KEY NOT NULL,
    seen   TEXT NOT NULL
) WITHOUT ROWID;

-- Records of the merged state this catalogue could not take (a clash no rule settles, a
-- value of the wrong type): never read as deleted here, named in GET /api/sync.
CREATE TABLE sync_unapplied (
    kind     TEXT NOT NULL,
    id       TEXT NOT NULL,
    problem  TEXT NOT NULL,
    PRIMARY KEY (kind, id)
) WITHOUT ROWID;

-- Fields both sides changed (GET /api/sync/conflicts): the winning and the losing value as
-- the bundle holds them (a secret's sealed under the sync key, never shown) and each side's
-- stamp. The newest `sync_conflicts_kept` are kept.
CREATE TABLE sync_conflicts (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    detected_at  TEXT NOT NULL,
    kind         TEXT NOT NULL,
    id           TEXT NOT NULL,
    field        TEXT NOT NULL,
    winner       TEXT NOT NULL,
    loser        TEXT NOT NULL
);
