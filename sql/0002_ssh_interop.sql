-- Schema version 2 (issue #11, OpenSSH interop): a host's ProxyJump chain and the extra
-- ssh_config directives it keeps verbatim. Both are ordered child tables of hosts.

-- The hops of a host's ProxyJump chain, in order. Deleting the host drops its chain; a
-- host still used as a hop cannot be deleted (the API answers 409 HOST_IN_USE first, the
-- foreign key is the backstop).
CREATE TABLE host_jumps (
    host_id       TEXT NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,
    position      INTEGER NOT NULL,
    jump_host_id  TEXT NOT NULL REFERENCES hosts(id),
    PRIMARY KEY (host_id, position)
) WITHOUT ROWID;
-- "Which hosts use this one as a hop" (delete check) is one index probe.
CREATE INDEX host_jumps_by_jump ON host_jumps (jump_host_id);

-- Directives such as `ServerAliveInterval 30`, kept verbatim in the order given.
CREATE TABLE host_ssh_options (
    host_id   TEXT NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,
    position  INTEGER NOT NULL,
    option    TEXT NOT NULL,
    PRIMARY KEY (host_id, position)
) WITHOUT ROWID;
