-- Schema version 4: the host-key trust store shared with OpenSSH's known_hosts, the
-- verdicts that block `connect`, and the audit log (README: "Host keys (known_hosts)" and
-- "Audit log").

-- One host name (or hashed name, or pattern) and one key per row: an imported comma list
-- becomes one row per name. `host` is the known_hosts token as written, lowercased when it
-- is plain (`example.com`, `[example.com]:2222`, `*.corp`) and as given when it is hashed
-- (`|1|salt|hash`, whose base64 is case-sensitive). `seq` keeps the order rows were added
-- in, which the export follows.
CREATE TABLE known_hosts (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,
    host         TEXT NOT NULL,
    hashed       INTEGER NOT NULL CHECK (hashed IN (0, 1)),
    wildcard     INTEGER NOT NULL CHECK (wildcard IN (0, 1)),
    key_type     TEXT NOT NULL,
    public_key   TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    marker       TEXT NOT NULL CHECK (marker IN ('none', 'cert-authority', 'revoked')),
    comment      TEXT NOT NULL DEFAULT '',
    source       TEXT NOT NULL CHECK (source IN ('accept', 'replace', 'import')),
    first_seen   TEXT NOT NULL,
    last_seen    TEXT NOT NULL
);
-- The same name, key and marker are one entry: a re-import finds it instead of adding it.
CREATE UNIQUE INDEX known_hosts_entry ON known_hosts (host, public_key, marker);
-- Hashed and wildcard rows are matched in Rust (HMAC or glob); exact names by this index.
CREATE INDEX known_hosts_inexact ON known_hosts (hashed, wildcard) WHERE hashed = 1 OR wildcard = 1;

-- A `changed` or `revoked` verdict of verify, per lookup name (`host` or `[host]:port`):
-- `connect` refuses the host (or any route through it) while one is recorded, until an
-- accept or replace for that name clears it.
CREATE TABLE host_key_alerts (
    host         TEXT PRIMARY KEY NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('changed', 'revoked')),
    key_type     TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    at           TEXT NOT NULL
) WITHOUT ROWID;

-- Security-relevant events, newest kept (store/audit.rs trims it to AUDIT_MAX_ENTRIES
-- in the transaction that appends). AUTOINCREMENT: a trimmed sequence number is never
-- given again, so `before` paging stays stable. `subject` names ids and host names, never
-- a secret; `detail` is a JSON object.
CREATE TABLE audit_log (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    at       TEXT NOT NULL,
    event    TEXT NOT NULL,
    subject  TEXT NOT NULL,
    detail   TEXT NOT NULL DEFAULT '{}'
);
