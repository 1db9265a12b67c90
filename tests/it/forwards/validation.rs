//! Both sides of every edge of the rules' table (docs/forwards.md, "Rules"): each broken
//! rule is 400 `VALIDATION_ERROR` naming the field; a listening address other than loopback
//! is accepted with a warning.

use std::sync::atomic::{AtomicU16, Ordering};

use serde_json::{json, Value};

use super::{add_rule, assert_invalid, group_rules, host, host_rules};
use crate::support::{id_of, Service};

/// Ports for accepted rules: each one distinct, so that no accepted rule conflicts.
static NEXT_PORT: AtomicU16 = AtomicU16::new(30000);

fn port() -> u16 {
    NEXT_PORT.fetch_add(1, Ordering::SeqCst)
}

/// `body` with `extra`'s fields set (a `null` removes the field).
fn with(body: &Value, extra: Value) -> Value {
    let mut out = body.clone();
    for (field, value) in extra.as_object().unwrap() {
        match value {
            Value::Null => {
                out.as_object_mut().unwrap().remove(field);
            }
            _ => out[field] = value.clone(),
        }
    }
    out
}

fn local() -> Value {
    json!({"type": "local", "bind_port": port(), "target_host": "db.internal", "target_port": 5432})
}

fn remote() -> Value {
    json!({"type": "remote", "bind_port": port(), "target_host": "localhost", "target_port": 3000})
}

fn dynamic() -> Value {
    json!({"type": "dynamic", "bind_port": port()})
}

/// An absolute socket path of exactly `bytes` bytes.
fn socket_of(bytes: usize) -> String {
    let head = "/tmp/hm-";
    format!("{head}{}", "s".repeat(bytes - head.len()))
}

struct Rig {
    service: Service,
    path: String,
}

impl Rig {
    fn new(name: &str) -> Rig {
        let service = Service::start(name);
        let path = host_rules(&host(&service, "web", json!({})));
        Rig { service, path }
    }

    #[track_caller]
    fn accepts(&self, body: Value) -> Value {
        let created = add_rule(&self.service, &self.path, body);
        // Gone again, so that no accepted rule is in another's way.
        self.service
            .delete(&format!("{}/{}", self.path, id_of(&created)))
            .expect(204);
        created
    }

    #[track_caller]
    fn refuses(&self, body: Value, field: &str) {
        let response = self.service.post(&self.path, &body);
        assert_invalid(&response, field);
    }
}

#[test]
fn type_is_required_and_one_of_local_remote_dynamic() {
    let rig = Rig::new("fwd-valid-type");
    rig.refuses(with(&local(), json!({"type": null})), "type");
    rig.refuses(with(&local(), json!({"type": "sideways"})), "type");
    rig.refuses(with(&local(), json!({"type": "Local"})), "type");
    rig.refuses(with(&local(), json!({"type": 1})), "type");
    for body in [local(), remote(), dynamic()] {
        rig.accepts(body);
    }
}

#[test]
fn a_bind_port_is_1_to_65535_and_0_only_for_a_remote_rule() {
    let rig = Rig::new("fwd-valid-port");
    for bad in [json!(65536), json!(-1), json!("80"), json!(1.5)] {
        rig.refuses(with(&local(), json!({"bind_port": bad})), "bind_port");
    }
    rig.refuses(with(&local(), json!({"bind_port": 0})), "bind_port");
    rig.refuses(with(&dynamic(), json!({"bind_port": 0})), "bind_port");
    rig.refuses(with(&remote(), json!({"bind_port": 65536})), "bind_port");
    assert_eq!(
        rig.accepts(with(&remote(), json!({"bind_port": 0})))["bind_port"],
        0
    );
    assert_eq!(
        rig.accepts(with(&local(), json!({"bind_port": 1})))["bind_port"],
        1
    );
    assert_eq!(
        rig.accepts(with(&local(), json!({"bind_port": 65535})))["bind_port"],
        65535
    );
    assert_eq!(
        rig.accepts(with(&dynamic(), json!({"bind_port": 65534})))["bind_port"],
        65534
    );
}

#[test]
fn exactly_one_of_bind_port_and_bind_socket_and_a_dynamic_rule_binds_a_port_only() {
    let rig = Rig::new("fwd-valid-bind");
    rig.refuses(with(&local(), json!({"bind_port": null})), "bind_");
    rig.refuses(
        with(&local(), json!({"bind_socket": "/tmp/hm-both"})),
        "bind_",
    );
    rig.refuses(
        with(
            &dynamic(),
            json!({"bind_port": null, "bind_socket": "/tmp/hm-d"}),
        ),
        "bind_socket",
    );
    let socket = rig.accepts(with(
        &local(),
        json!({"bind_port": null, "bind_socket": "/tmp/hm-l"}),
    ));
    assert_eq!(
        (socket["bind_socket"].clone(), socket["bind_port"].clone()),
        (json!("/tmp/hm-l"), Value::Null)
    );
    rig.accepts(with(
        &remote(),
        json!({"bind_port": null, "bind_socket": "/tmp/hm-r"}),
    ));
}

#[test]
fn a_socket_path_is_absolute_at_most_103_bytes_without_colon_or_control_characters() {
    let rig = Rig::new("fwd-valid-socket");
    let socket = |path: String| with(&local(), json!({"bind_port": null, "bind_socket": path}));
    let at_limit = socket_of(103);
    assert_eq!(at_limit.len(), 103);
    assert_eq!(
        rig.accepts(socket(at_limit.clone()))["bind_socket"],
        json!(at_limit)
    );
    rig.refuses(socket(socket_of(104)), "bind_socket");
    for bad in [
        "tmp/relative",
        "",
        "/tmp/a:b",
        "/tmp/a\tb",
        "/tmp/a\nb",
        "/tmp/a\u{7f}b",
    ] {
        rig.refuses(socket(bad.to_owned()), "bind_socket");
    }
    let target = |path: &str| {
        with(
            &local(),
            json!({"target_host": null, "target_port": null, "target_socket": path}),
        )
    };
    assert_eq!(
        rig.accepts(target(&socket_of(103)))["target_socket"],
        json!(socket_of(103))
    );
    rig.refuses(target(&socket_of(104)), "target_socket");
    rig.refuses(target("/tmp/a:b"), "target_socket");
    rig.refuses(target("relative"), "target_socket");
}

#[test]
fn a_bind_address_is_localhost_star_ipv4_or_bracketed_ipv6_and_only_with_a_port() {
    let rig = Rig::new("fwd-valid-address");
    for good in [
        "localhost",
        "*",
        "127.0.0.1",
        "0.0.0.0",
        "192.168.1.10",
        "[::1]",
        "[::]",
        "[fe80::1]",
    ] {
        let created = rig.accepts(with(&local(), json!({"bind_address": good})));
        assert_eq!(created["bind_address"], good);
    }
    for bad in [
        "::1",
        "[::1",
        "256.1.1.1",
        "1.2.3",
        "example.com",
        "",
        " localhost",
        "[127.0.0.1]",
        "*:1",
    ] {
        rig.refuses(with(&local(), json!({"bind_address": bad})), "bind_address");
    }
    rig.refuses(
        with(
            &local(),
            json!({"bind_port": null, "bind_socket": "/tmp/hm-a", "bind_address": "localhost"}),
        ),
        "bind_address",
    );
    rig.accepts(with(&dynamic(), json!({"bind_address": "[::1]"})));
    rig.accepts(with(&remote(), json!({"bind_address": "localhost"})));
}

#[test]
fn a_local_rule_needs_exactly_one_target_and_a_target_port_is_1_to_65535() {
    let rig = Rig::new("fwd-valid-target");
    rig.refuses(
        with(&local(), json!({"target_host": null, "target_port": null})),
        "target_",
    );
    rig.refuses(
        with(&local(), json!({"target_socket": "/tmp/hm-t"})),
        "target_",
    );
    rig.refuses(with(&local(), json!({"target_port": null})), "target_port");
    rig.refuses(with(&local(), json!({"target_host": null})), "target_host");
    for bad in [json!(0), json!(65536), json!(-5), json!("22")] {
        rig.refuses(with(&local(), json!({"target_port": bad})), "target_port");
    }
    for bad in [
        "bad host",
        "",
        "host:22",
        "a..b",
        "-lead.example.com",
        "[::1",
    ] {
        rig.refuses(with(&local(), json!({"target_host": bad})), "target_host");
    }
    assert_eq!(
        rig.accepts(with(&local(), json!({"target_port": 1})))["target_port"],
        1
    );
    assert_eq!(
        rig.accepts(with(&local(), json!({"target_port": 65535})))["target_port"],
        65535
    );
    for good in ["localhost", "db.internal", "10.0.0.5", "db-1.example.com"] {
        assert_eq!(
            rig.accepts(with(&local(), json!({"target_host": good})))["target_host"],
            good
        );
    }
    for (given, answered) in [
        ("[::1]", "::1"),
        ("::1", "::1"),
        ("[2001:db8::5]", "2001:db8::5"),
    ] {
        let created = rig.accepts(with(&local(), json!({"target_host": given})));
        assert_eq!(
            created["target_host"], answered,
            "an IPv6 target is answered without brackets"
        );
    }
}

#[test]
fn a_remote_rule_may_have_no_target_and_a_dynamic_rule_none() {
    let rig = Rig::new("fwd-valid-remote-dynamic");
    let socks = rig.accepts(with(
        &remote(),
        json!({"target_host": null, "target_port": null}),
    ));
    assert_eq!(
        (socks["target_host"].clone(), socks["target_port"].clone()),
        (Value::Null, Value::Null)
    );
    rig.refuses(with(&remote(), json!({"target_host": null})), "target_host");
    rig.refuses(with(&remote(), json!({"target_port": null})), "target_port");
    rig.refuses(
        with(&remote(), json!({"target_socket": "/tmp/hm-t"})),
        "target_",
    );
    rig.refuses(
        with(
            &dynamic(),
            json!({"target_host": "db.internal", "target_port": 5432}),
        ),
        "target_",
    );
    rig.refuses(
        with(&dynamic(), json!({"target_host": "db.internal"})),
        "target_host",
    );
    rig.refuses(
        with(&dynamic(), json!({"target_socket": "/tmp/hm-t"})),
        "target_socket",
    );
}

#[test]
fn a_description_is_at_most_200_characters_on_one_line_and_flags_are_booleans() {
    let rig = Rig::new("fwd-valid-description");
    let long = "é".repeat(200);
    assert_eq!(
        rig.accepts(with(&local(), json!({"description": long})))["description"],
        json!(long)
    );
    rig.refuses(
        with(&local(), json!({"description": "é".repeat(201)})),
        "description",
    );
    rig.refuses(
        with(&local(), json!({"description": "two\nlines"})),
        "description",
    );
    rig.refuses(with(&local(), json!({"description": 5})), "description");
    rig.refuses(with(&local(), json!({"enabled": "yes"})), "enabled");
    rig.refuses(with(&local(), json!({"autostart": 1})), "autostart");
    let manual = rig.accepts(with(
        &local(),
        json!({"enabled": false, "autostart": false}),
    ));
    assert_eq!(
        (manual["enabled"].clone(), manual["autostart"].clone()),
        (json!(false), json!(false))
    );
}

#[test]
fn a_put_that_breaks_a_rule_is_400_naming_the_field_and_changes_nothing() {
    let rig = Rig::new("fwd-valid-put");
    let created = add_rule(&rig.service, &rig.path, local());
    let path = format!("{}/{}", rig.path, id_of(&created));
    for (body, field) in [
        (json!({"bind_port": 0}), "bind_port"),
        (json!({"type": "dynamic"}), "target_"),
        (json!({"target_port": null}), "target_port"),
        (json!({"bind_socket": "/tmp/hm-put"}), "bind_"),
        (json!({"description": "x".repeat(201)}), "description"),
        (json!({"bind_address": "example.com"}), "bind_address"),
    ] {
        assert_invalid(&rig.service.put(&path, &body), field);
    }
    assert_eq!(rig.service.get(&path).expect(200), created);
    // A change of type with the fields it needs is fine.
    let changed = rig
        .service
        .put(
            &path,
            &json!({"type": "dynamic", "target_host": null, "target_port": null}),
        )
        .expect(200);
    assert_eq!(changed["type"], "dynamic");
}

#[test]
fn a_group_rule_is_checked_as_a_host_rule_is() {
    let service = Service::start("fwd-valid-group");
    let path = group_rules(&service.new_group("fleet"));
    assert_invalid(
        &service.post(&path, &with(&local(), json!({"bind_port": 0}))),
        "bind_port",
    );
    assert_invalid(
        &service.post(
            &path,
            &with(&dynamic(), json!({"target_host": "x", "target_port": 1})),
        ),
        "target_",
    );
    add_rule(&service, &path, with(&remote(), json!({"bind_port": 0})));
}

#[test]
fn a_listening_address_other_than_loopback_is_accepted_with_a_warning() {
    let rig = Rig::new("fwd-valid-warning");
    for address in ["*", "0.0.0.0", "[::]", "192.168.1.10"] {
        for body in [local(), dynamic(), remote()] {
            let created = rig.accepts(with(&body, json!({"bind_address": address})));
            let warnings = created["warnings"].as_array().expect("warnings");
            assert_eq!(warnings.len(), 1, "{address} {}: {created}", body["type"]);
        }
    }
    for address in [
        json!("localhost"),
        json!("127.0.0.1"),
        json!("[::1]"),
        Value::Null,
    ] {
        for body in [local(), dynamic(), remote()] {
            let created = rig.accepts(with(&body, json!({"bind_address": address})));
            assert_eq!(created["warnings"], json!([]), "{address}: {created}");
        }
    }
    let socket = rig.accepts(with(
        &local(),
        json!({"bind_port": null, "bind_socket": "/tmp/hm-w"}),
    ));
    assert_eq!(socket["warnings"], json!([]));
}

#[test]
fn a_socket_path_holds_no_dollar_brace_and_a_remote_dynamic_rule_binds_a_port_only() {
    let rig = Rig::new("fwd-valid-socket-grammar");
    let socket = |path: &str| with(&local(), json!({"bind_port": null, "bind_socket": path}));
    rig.refuses(socket("/tmp/hm${HOME}.sock"), "bind_socket");
    let target = |path: &str| {
        with(
            &local(),
            json!({"target_host": null, "target_port": null, "target_socket": path}),
        )
    };
    rig.refuses(target("/tmp/hm${USER}"), "target_socket");
    for literal in [
        "/tmp/hm$HOME.sock",
        "/tmp/hm%h.sock",
        "/tmp/hm\\x.sock",
        "/tmp/hm{}.sock",
    ] {
        assert_eq!(
            rig.accepts(socket(literal))["bind_socket"],
            literal,
            "{literal}"
        );
    }
    let remote_dynamic = json!({"type": "remote", "bind_socket": "/tmp/hm-rd.sock"});
    rig.refuses(remote_dynamic, "bind_socket");
}

#[test]
fn a_put_position_is_a_non_negative_integer() {
    let rig = Rig::new("fwd-valid-position");
    let created = add_rule(&rig.service, &rig.path, local());
    let path = format!("{}/{}", rig.path, id_of(&created));
    for bad in [json!(-1), json!("0"), json!(1.5), json!(true)] {
        assert_invalid(
            &rig.service.put(&path, &json!({"position": bad})),
            "position",
        );
    }
    assert_eq!(
        rig.service.put(&path, &json!({"position": 0})).expect(200)["position"],
        0
    );
}
