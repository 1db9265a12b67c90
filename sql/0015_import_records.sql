-- Schema: where each imported object came from, and what the import last wrote into it
-- (docs/import.md, "Re-import: what the source owns, and what stays yours").
--
-- One row per (format, kind, source id): the object it became (`object_id`, a host, group or
-- identity id; the row stays when that object is deleted, which is how a re-import knows a
-- host was deleted here), and `fields`, a JSON object of each field the source owns as the
-- import wrote it. A field whose value here differs from `fields` was edited here, and a
-- re-import keeps it. A password is recorded only as the SHA-256 of its sealed bytes (which
-- are random per seal), never as anything derived from the password itself.
CREATE TABLE import_records (
    format      TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('host', 'group', 'identity')),
    source_id   TEXT NOT NULL,
    object_id   TEXT NOT NULL,
    fields      TEXT NOT NULL,
    imported_at TEXT NOT NULL,
    PRIMARY KEY (format, kind, source_id)
) WITHOUT ROWID;
