-- Schema version 5 (names compared caselessly): sibling group names and key names are
-- unique by their caseless match key (src/model/fold.rs: full case folding and canonical
-- equivalence), so `Straße`/`STRASSE` or a precomposed and a decomposed `Café` no longer
-- coexist. `name_key` (the lowercase) stays: lists still sort by it.
--
-- SQL cannot compute the key, so the column starts NULL and the service fills it at every
-- start for rows that lack it (store::groups::fill_fold_keys, store::keys::fill_fold_keys):
-- the rows of this migration, and rows a tool inserted without it. A unique index treats
-- NULLs as distinct, so such rows never block the start; a row whose key clashes when it is
-- filled is renamed ` (2)`, ` (3)`, ... like a group moved by a delete (README, Groups).

ALTER TABLE groups ADD COLUMN fold_key TEXT;
DROP INDEX groups_sibling_name;
CREATE UNIQUE INDEX groups_sibling_fold ON groups (coalesce(parent_id, ''), fold_key);

ALTER TABLE keys ADD COLUMN fold_key TEXT;
CREATE UNIQUE INDEX keys_fold ON keys (fold_key);
