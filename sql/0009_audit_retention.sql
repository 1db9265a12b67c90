-- The audit log keeps security events by time and routine ones by count, and merges
-- repeated routine events (store/audit.rs, README "Audit log"). `routine` is the event's
-- class, written with the entry; `count` is how many events one entry stands for;
-- `merge_key` (routine entries only) names what a repeat must share to be merged: the
-- event, subject, detail and minute.
ALTER TABLE audit_log ADD COLUMN routine INTEGER NOT NULL DEFAULT 0 CHECK (routine IN (0, 1));
ALTER TABLE audit_log ADD COLUMN count INTEGER NOT NULL DEFAULT 1 CHECK (count >= 1);
ALTER TABLE audit_log ADD COLUMN merge_key TEXT;
UPDATE audit_log SET routine = 1 WHERE event = 'agent.signed';
CREATE INDEX audit_log_by_class ON audit_log (routine, seq);
CREATE INDEX audit_log_by_merge_key ON audit_log (merge_key) WHERE merge_key IS NOT NULL;

-- How many routine entries are kept (a test may set fewer at start).
ALTER TABLE log_retention ADD COLUMN audit_routine_kept INTEGER NOT NULL DEFAULT 10000
    CHECK (audit_routine_kept >= 1);
