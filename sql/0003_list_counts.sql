-- Schema version 3 (issue #9, performance): counts the host list reads on every page, kept
-- by triggers so a page never counts rows. At 100,000 hosts `SELECT count(*) FROM hosts`
-- read 5 MB of index per page (0.8-1.1 ms, most of page 1's cost) and the count of a tag on
-- a quarter of the hosts 1.2-1.9 ms; each of these is now one row.

-- The number of hosts: one row.
CREATE TABLE host_total (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    host_count  INTEGER NOT NULL
);
INSERT INTO host_total (id, host_count) SELECT 1, count(*) FROM hosts;
CREATE TRIGGER host_total_insert AFTER INSERT ON hosts BEGIN
    UPDATE host_total SET host_count = host_count + 1 WHERE id = 1;
END;
CREATE TRIGGER host_total_delete AFTER DELETE ON hosts BEGIN
    UPDATE host_total SET host_count = host_count - 1 WHERE id = 1;
END;

-- The number of hosts carrying each tag; a tag's row goes when its last host drops it
-- (deleting a host drops its tags by cascade, which fires the delete trigger too).
CREATE TABLE tag_counts (
    tag         TEXT PRIMARY KEY NOT NULL,
    host_count  INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO tag_counts (tag, host_count) SELECT tag, count(*) FROM host_tags GROUP BY tag;
CREATE TRIGGER tag_counts_insert AFTER INSERT ON host_tags BEGIN
    INSERT INTO tag_counts (tag, host_count) VALUES (new.tag, 1)
        ON CONFLICT (tag) DO UPDATE SET host_count = host_count + 1;
END;
CREATE TRIGGER tag_counts_delete AFTER DELETE ON host_tags BEGIN
    UPDATE tag_counts SET host_count = host_count - 1 WHERE tag = old.tag;
    DELETE FROM tag_counts WHERE tag = old.tag AND host_count <= 0;
END;

-- Search no longer reads the trigram index: the list scans each host's lowercased name and
-- hostname in memory (src/store/list_index.rs), which answers terms of any length (the
-- index could not answer 1-2 characters) in about 1 ms at 100,000 hosts, where counting a
-- common term's matches through the index alone took 0.8-1.4 ms. Its triggers cost every
-- write that names a host, and the index was an eighth of the file.
DROP TRIGGER hosts_fts_insert;
DROP TRIGGER hosts_fts_delete;
DROP TRIGGER hosts_fts_update;
DROP TABLE hosts_fts;
