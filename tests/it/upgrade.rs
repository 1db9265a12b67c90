//! Upgrading a database the binary wrote before the forward rules (schema 12, docs/forwards.md
//! "The `~/.ssh/config` export and import", last paragraph): at its next start the service
//! moves the directives that now have fields out of a host's `ssh_options`, and the API shows
//! them as rules, command and environment. Black-box: the binary writes the database, the test
//! takes it back to schema 12 with SQLite, and the binary upgrades it again.

use std::time::Duration;

use serde_json::json;

use crate::support::{fresh_dir, host_body, id_of, Options, Service};

const DEADLINE: Duration = Duration::from_secs(30);

/// Schema 15 back to 12: what sql/0013, sql/0014 and sql/0015 added goes, and the host's directives
/// return to `host_ssh_options` as an old build kept them.
const BACK_TO_12: &str = "
    PRAGMA wal_checkpoint(TRUNCATE);
    DROP TABLE forwards;
    DROP TABLE env_secrets;
    DROP TABLE import_records;
    DROP TABLE saved_searches;
    DROP TABLE snapshots;
    DROP TABLE sync_settings;
    DROP TABLE sync_peers;
    DROP TABLE sync_files;
    DROP TABLE sync_unapplied;
    DROP TABLE sync_conflicts;
    ALTER TABLE hosts DROP COLUMN startup;
    ALTER TABLE groups DROP COLUMN default_set_env;
    ALTER TABLE groups DROP COLUMN default_send_env;
    ALTER TABLE key_certificates DROP COLUMN announced;
    PRAGMA user_version = 12;";

#[test]
fn a_schema_12_database_has_its_forward_command_and_env_lines_moved_into_fields_at_start() {
    let data_dir = fresh_dir("upgrade-13").join("data");
    let options = || Options {
        data_dir: Some(data_dir.clone()),
        ..Options::default()
    };
    let mut first = Service::start_with("upgrade-13-first", options());
    let host = id_of(
        &first
            .post(
                "/api/hosts",
                &host_body(
                    "old",
                    "old.example.com",
                    json!({"ssh_options": ["Compression yes"]}),
                ),
            )
            .expect(201),
    );
    first.terminate(DEADLINE).expect("stopped");
    drop(first);
    {
        let conn = rusqlite::Connection::open(data_dir.join("host-manager.db")).unwrap();
        conn.execute_batch(BACK_TO_12).unwrap();
        let lines = [
            "LocalForward 8080 localhost:80",
            "SetEnv LANG=C.UTF-8",
            "RemoteCommand echo 100%%",
            "Compression yes",
        ];
        conn.execute("DELETE FROM host_ssh_options WHERE host_id = ?1", [&host])
            .unwrap();
        for (position, line) in lines.iter().enumerate() {
            conn.execute(
                "INSERT INTO host_ssh_options (host_id, position, option) VALUES (?1, ?2, ?3)",
                rusqlite::params![host, position as i64, line],
            )
            .unwrap();
        }
    }
    let second = Service::start_with("upgrade-13-second", options());
    let view = second.get(&format!("/api/hosts/{host}")).expect(200);
    assert_eq!(view["ssh_options"], json!(["Compression yes"]), "{view}");
    assert_eq!(view["remote_command"], "echo 100%");
    assert_eq!(
        view["set_env"],
        json!([{"name": "LANG", "value": "C.UTF-8"}])
    );
    let rules = second
        .get(&format!("/api/hosts/{host}/forwards"))
        .expect(200);
    let rule = &rules["items"][0];
    assert_eq!(
        (
            rule["type"].clone(),
            rule["bind_port"].clone(),
            rule["target_port"].clone()
        ),
        (json!("local"), json!(8080), json!(80)),
        "{rules}"
    );
}
