//! The vault's events in the audit log (docs/api.md, "Audit log"): unlock, lock (by a request or
//! `--auto-lock`), password set, change and removal, and wrong passwords, the latter written
//! for the 1st, 2nd, 4th, 8th, ... failure of a streak; never a secret.

use serde_json::{json, Value};

use crate::support::{vault_audit, wait_until, Service};

fn entry(event: &str, detail: Value) -> (String, Value) {
    (event.to_owned(), detail)
}

#[test]
fn set_lock_unlock_change_and_remove_are_audited_in_order_without_a_secret() {
    let service = Service::start("vault-audit-events");
    let first = "audit-first-secret-4b1e";
    let second = "audit-second-secret-9c0d";
    service
        .put("/api/vault/password", &json!({"new_password": first}))
        .expect(200);
    service.post("/api/vault/lock", &json!({})).expect(200);
    // Locking a locked vault changes nothing and is not audited.
    service.post("/api/vault/lock", &json!({})).expect(200);
    service
        .post("/api/vault/unlock", &json!({"password": first}))
        .expect(200);
    // Unlocking an unlocked vault neither.
    service
        .post("/api/vault/unlock", &json!({"password": first}))
        .expect(200);
    service
        .put(
            "/api/vault/password",
            &json!({"current_password": first, "new_password": second}),
        )
        .expect(200);
    service
        .request_raw_body(
            "DELETE",
            "/api/vault/password",
            &[("Content-Type", "application/json".into())],
            Some(json!({"current_password": second}).to_string().as_bytes()),
        )
        .expect(200);
    assert_eq!(
        vault_audit(&service),
        [
            entry("vault.password_set", json!({})),
            entry("vault.locked", json!({"by": "request"})),
            entry("vault.unlocked", json!({"by": "request"})),
            entry("vault.password_changed", json!({})),
            entry("vault.password_removed", json!({})),
        ]
    );
    let text = service.get("/api/audit").text();
    assert!(!text.contains(first) && !text.contains(second), "{text}");
}

#[test]
fn wrong_passwords_are_audited_at_the_1st_and_2nd_failure_not_the_3rd_and_a_right_one_ends_the_streak(
) {
    let service = Service::start("vault-audit-failures");
    let guess = "audit-wrong-guess-77aa";
    service
        .put("/api/vault/password", &json!({"new_password": "right"}))
        .expect(200);
    service.post("/api/vault/lock", &json!({})).expect(200);
    let failed = |count: u32| {
        entry(
            "vault.unlock_failed",
            json!({"consecutive_failures": count}),
        )
    };
    for _ in 0..3 {
        service
            .post("/api/vault/unlock", &json!({"password": guess}))
            .assert_error(401, "INVALID_PASSWORD");
    }
    service
        .post("/api/vault/unlock", &json!({"password": "right"}))
        .expect(200);
    let after_three = vault_audit(&service);
    assert_eq!(
        after_three[2..],
        [
            failed(1),
            failed(2),
            entry("vault.unlocked", json!({"by": "request"}))
        ]
    );
    // The right password ended the streak: the next wrong one is the 1st again, and a wrong
    // current password of a change is audited as such.
    service
        .put(
            "/api/vault/password",
            &json!({"current_password": guess, "new_password": "x"}),
        )
        .assert_error(401, "INVALID_PASSWORD");
    let last = vault_audit(&service).pop().unwrap();
    assert_eq!(
        last,
        entry(
            "vault.password_check_failed",
            json!({"consecutive_failures": 1})
        )
    );
    assert!(!service.get("/api/audit").text().contains(guess));
}

#[test]
fn the_fourth_wrong_password_of_a_streak_is_audited() {
    let service = Service::start("vault-audit-fourth");
    service
        .put("/api/vault/password", &json!({"new_password": "right"}))
        .expect(200);
    for _ in 0..4 {
        service
            .put(
                "/api/vault/password",
                &json!({"current_password": "wrong", "new_password": "x"}),
            )
            .assert_error(401, "INVALID_PASSWORD");
    }
    let counts: Vec<Value> = vault_audit(&service)
        .into_iter()
        .filter(|(event, _)| event == "vault.password_check_failed")
        .map(|(_, detail)| detail["consecutive_failures"].clone())
        .collect();
    assert_eq!(counts, [json!(1), json!(2), json!(4)]);
}

#[test]
fn an_auto_lock_is_audited_as_such() {
    let service = Service::start_args("vault-audit-auto-lock", &["--auto-lock", "2"]);
    service
        .put("/api/vault/password", &json!({"new_password": "pw"}))
        .expect(200);
    let locked = wait_until(std::time::Duration::from_secs(60), || {
        service.get("/api/vault").expect(200)["vault_locked"] == true
    });
    assert!(locked, "the vault never locked");
    service
        .post("/api/vault/unlock", &json!({"password": "pw"}))
        .expect(200);
    assert_eq!(
        vault_audit(&service)[1],
        entry("vault.locked", json!({"by": "auto-lock"}))
    );
}
