-- Schema: the status of each attached certificate that the change feed last announced
-- (docs/api.md, "Certificates"): `not_yet_valid`, `valid`, `expiring` or `expired`; `''` when
-- no one has looked yet (a database from before this file: the first look records the
-- status without an entry, as nothing was seen to change).
--
-- The certificate watcher (src/expiry.rs) compares it with the status now, once a minute;
-- a change logs one `key` `updated` entry for the key (its view changed) and is recorded
-- here, so a restart never announces a change twice.
ALTER TABLE key_certificates ADD COLUMN announced TEXT NOT NULL DEFAULT '';
