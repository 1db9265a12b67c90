-- Schema: saved searches (docs/query.md, "Saved searches"): a name and a query of the query
-- language, which the app shows as a smart group. `q` is kept as the user wrote it (it was
-- checked when written); `fold_key` is the name's caseless match key, unique as key and
-- identity names are.
CREATE TABLE saved_searches (
    id          TEXT PRIMARY KEY NOT NULL,
    name        TEXT NOT NULL,
    name_key    TEXT NOT NULL,
    fold_key    TEXT NOT NULL UNIQUE,
    q           TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX saved_searches_by_name ON saved_searches (name_key, id);
