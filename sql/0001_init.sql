-- Schema version 1: groups, keys, hosts with tags and a trigram search index, the vault row.
--
-- Shipped migrations are never edited; every change is a new numbered file (style §3.6).
-- Ids are lowercase hyphenated UUID text; timestamps RFC 3339 UTC text with milliseconds.
-- `name_key` columns hold the Rust-side lowercase of `name`: SQLite's NOCASE and lower()
-- only fold ASCII, and names are sorted and compared case-insensitively in any script.

CREATE TABLE groups (
    id          TEXT PRIMARY KEY NOT NULL,
    parent_id   TEXT REFERENCES groups(id),
    name        TEXT NOT NULL,
    name_key    TEXT NOT NULL,
    color       TEXT NOT NULL DEFAULT '',
    icon        TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
-- api-decisions §4: a name is unique among its siblings, compared case-insensitively.
CREATE UNIQUE INDEX groups_sibling_name ON groups (coalesce(parent_id, ''), name_key);
CREATE INDEX groups_parent ON groups (parent_id);

CREATE TABLE keys (
    id              TEXT PRIMARY KEY NOT NULL,
    name            TEXT NOT NULL,
    name_key        TEXT NOT NULL UNIQUE,
    type            TEXT NOT NULL,
    public_key      TEXT NOT NULL,
    fingerprint     TEXT NOT NULL UNIQUE,
    comment         TEXT NOT NULL DEFAULT '',
    has_passphrase  INTEGER NOT NULL,
    private_key     BLOB NOT NULL,      -- sealed by the vault, never plaintext
    passphrase      BLOB,               -- sealed by the vault; NULL when none is stored
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);

-- `sort_order` is the API's `order` field: ORDER is an SQL keyword, and a column that must
-- be quoted everywhere invites mistakes.
-- `seq` is the row's integer key, never shown: the search index and the tag rows refer to
-- it (an integer join is several times cheaper than one on the text id), and as an
-- INTEGER PRIMARY KEY it is the rowid, which VACUUM keeps (a plain rowid it may renumber,
-- which would silently detach the search index).
CREATE TABLE hosts (
    seq           INTEGER PRIMARY KEY,
    id            TEXT NOT NULL UNIQUE,
    name          TEXT NOT NULL,
    name_key      TEXT NOT NULL,
    hostname      TEXT NOT NULL,
    port          INTEGER NOT NULL CHECK (port BETWEEN 1 AND 65535),
    username      TEXT NOT NULL,
    auth_type     TEXT NOT NULL CHECK (auth_type IN ('password', 'key', 'agent')),
    key_id        TEXT REFERENCES keys(id),
    password      BLOB,                 -- sealed by the vault; NULL when none is stored
    group_id      TEXT REFERENCES groups(id),
    is_favorite   INTEGER NOT NULL DEFAULT 0,
    color         TEXT NOT NULL DEFAULT '',
    sort_order    INTEGER NOT NULL DEFAULT 0,
    notes         TEXT NOT NULL DEFAULT '',
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    last_used_at  TEXT
);
-- One index per sort of GET /api/hosts, each ending in id so ties break the same way in
-- every page; a page walks one of them and reads only `seq` (store/hosts.rs).
-- Hostnames are ASCII (validated), so NOCASE is an exact case-insensitive order for them.
-- last_used_at: never-used hosts come last in both orders (api-decisions §3). Descending,
-- the plain index already puts NULL last; ascending needs the `IS NULL` expression first.
CREATE INDEX hosts_by_name ON hosts (name_key, id);
CREATE INDEX hosts_by_hostname ON hosts (hostname COLLATE NOCASE, id);
CREATE INDEX hosts_by_created ON hosts (created_at, id);
CREATE INDEX hosts_by_last_used ON hosts (last_used_at, id);
CREATE INDEX hosts_by_last_used_nulls_last ON hosts (last_used_at IS NULL, last_used_at, id);
CREATE INDEX hosts_by_group ON hosts (group_id, name_key, id);
-- "End of its group" on create and move is max(sort_order) of the group: one index probe.
CREATE INDEX hosts_by_group_order ON hosts (group_id, sort_order);
CREATE INDEX hosts_by_favorite ON hosts (is_favorite, name_key, id);
CREATE INDEX hosts_by_key ON hosts (key_id);

-- `position` keeps the order the tags were given in (api-decisions §3: repeats removed,
-- order kept).
CREATE TABLE host_tags (
    host_seq  INTEGER NOT NULL REFERENCES hosts(seq) ON DELETE CASCADE,
    tag       TEXT NOT NULL,
    position  INTEGER NOT NULL,
    PRIMARY KEY (host_seq, tag)
) WITHOUT ROWID;
CREATE INDEX host_tags_by_tag ON host_tags (tag, host_seq);

-- Substring search over name and hostname. Trigram answers terms of 3+ characters from the
-- index (case-insensitively); shorter terms fall back to a LIKE scan in the store.
CREATE VIRTUAL TABLE hosts_fts USING fts5 (
    name, hostname, content = 'hosts', content_rowid = 'seq', tokenize = 'trigram'
);
CREATE TRIGGER hosts_fts_insert AFTER INSERT ON hosts BEGIN
    INSERT INTO hosts_fts (rowid, name, hostname) VALUES (new.seq, new.name, new.hostname);
END;
CREATE TRIGGER hosts_fts_delete AFTER DELETE ON hosts BEGIN
    INSERT INTO hosts_fts (hosts_fts, rowid, name, hostname)
        VALUES ('delete', old.seq, old.name, old.hostname);
END;
CREATE TRIGGER hosts_fts_update AFTER UPDATE OF name, hostname ON hosts BEGIN
    INSERT INTO hosts_fts (hosts_fts, rowid, name, hostname)
        VALUES ('delete', old.seq, old.name, old.hostname);
    INSERT INTO hosts_fts (rowid, name, hostname) VALUES (new.seq, new.name, new.hostname);
END;

-- Direct host count per group, kept by triggers so GET /api/groups reads one row per group
-- instead of scanning every host: with 100,000 hosts the `GROUP BY group_id` scan of the
-- hosts index took 13 ms, this table 0.8 ms (issue #6). A group's row goes with the group.
CREATE TABLE group_host_counts (
    group_id    TEXT PRIMARY KEY NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    host_count  INTEGER NOT NULL
) WITHOUT ROWID;
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

-- The vault: one row. With no master password `data_key` is the raw 32-byte data key and
-- `header` is NULL; with one, `header` holds the KDF parameters and `data_key` the data key
-- sealed under the password-derived key (api-decisions §2).
CREATE TABLE vault (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    header    BLOB,
    data_key  BLOB NOT NULL
);
