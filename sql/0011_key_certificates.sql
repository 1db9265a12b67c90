-- Schema: OpenSSH user certificates attached to keys (docs/api.md, "Certificates").
--
-- A certificate is public data (no secret: it names a key, principals and a CA, and carries
-- the CA's signature), so it is stored as its text, `<type> <base64>`, and read again on
-- every use; nothing derived from it is stored but the principal set, which is what makes
-- two certificates of one key the same attachment (a new one for the same set replaces the
-- old). A key's certificates go with the key.
--
-- The change feed: a certificate belongs to its key's view, so attaching, replacing or
-- removing one is an edit of the key. The store does it in the same transaction as a move
-- of the key's `updated_at`, which the `keys_changed` trigger of 0006_changes.sql turns into
-- one `key` `updated` entry and one revision, as every other edit of a key (an entry of its
-- own here would make two entries and no revision for one edit).
CREATE TABLE key_certificates (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    key_id       TEXT NOT NULL REFERENCES keys(id) ON DELETE CASCADE,
    -- The principal set, sorted and once each, as a JSON array (`[]`: any principal).
    principals   TEXT NOT NULL,
    certificate  TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    UNIQUE (key_id, principals)
);
