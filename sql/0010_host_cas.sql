-- Schema version 10: a host certificate refused for its host blocks `connect` as a changed
-- or revoked key does (docs/api.md "Host keys (known_hosts)"). `host_key_alerts` gains the
-- `certificate_invalid` status and the verdict's reason (which key or CA is revoked, what
-- is wrong with a certificate), so that `connect`'s refusal can say why. SQLite cannot
-- change a CHECK constraint in place: the table is rebuilt with its rows (no trigger or
-- index refers to it).
CREATE TABLE host_key_alerts_new (
    host         TEXT PRIMARY KEY NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('changed', 'revoked', 'certificate_invalid')),
    key_type     TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    at           TEXT NOT NULL,
    reason       TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
INSERT INTO host_key_alerts_new (host, status, key_type, fingerprint, at)
    SELECT host, status, key_type, fingerprint, at FROM host_key_alerts;
DROP TABLE host_key_alerts;
ALTER TABLE host_key_alerts_new RENAME TO host_key_alerts;
