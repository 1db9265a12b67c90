-- Schema: snapshots of the catalogue (docs/reliability.md, "Snapshots"). Each row names one
-- file, `<data dir>/snapshots/<id>.sqlite`, a copy of the whole database made by SQLite's
-- `VACUUM INTO` before an import, a batch delete, a sync merge or a restore, or on request.
-- `reason` says which; `label` is the user's own name for a manual one; the counts and the
-- size are what the file held when it was taken (the list shows them without opening it);
-- `schema_version` is the `user_version` it was taken at (a restore migrates an older one).
CREATE TABLE snapshots (
    id              TEXT PRIMARY KEY NOT NULL,
    created_at      TEXT NOT NULL,
    reason          TEXT NOT NULL
        CHECK (reason IN ('manual', 'import', 'batch_delete', 'restore', 'sync_merge')),
    label           TEXT,
    schema_version  INTEGER NOT NULL,
    host_count      INTEGER NOT NULL,
    group_count     INTEGER NOT NULL,
    key_count       INTEGER NOT NULL,
    identity_count  INTEGER NOT NULL,
    size_bytes      INTEGER NOT NULL
);
CREATE INDEX snapshots_by_time ON snapshots (created_at, id);
