-- Schema version 8: the host list is planned in memory (src/store/list_index.rs).
-- It keeps each sort's order itself and counts its own sets, so no query reads these indexes
-- and counts any more, and each of them cost every write. Kept: hosts_by_created (the ssh
-- config export's order), hosts_by_group_order and hosts_by_key (lookups by group and key),
-- and group_host_counts (GET /api/groups/:id).

DROP INDEX hosts_by_name;
DROP INDEX hosts_by_hostname;
DROP INDEX hosts_by_last_used;
DROP INDEX hosts_by_last_used_nulls_last;
DROP INDEX hosts_by_group;
DROP INDEX hosts_by_favorite;

DROP TRIGGER host_total_insert;
DROP TRIGGER host_total_delete;
DROP TABLE host_total;

DROP TRIGGER tag_counts_insert;
DROP TRIGGER tag_counts_delete;
DROP TABLE tag_counts;
