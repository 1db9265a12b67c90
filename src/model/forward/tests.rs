//! The forward rules' unit tests: every rule of docs/forwards.md's table on both sides of its
//! edge, the OpenSSH forms `ssh -G` reads, overlap, and a seeded round-trip property.

use serde_json::{json, Map, Value};

use crate::fuzz::{settings, Rng};
use crate::model::forward::{ForwardKind, ForwardSettings, ForwardSpec};
use crate::model::ssh_words::{split_args, split_keyword};

fn body(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

fn spec(value: Value) -> ForwardSpec {
    ForwardSpec::from_json(&body(value)).unwrap()
}

/// The field a refused body names.
fn refused(value: Value) -> String {
    ForwardSpec::from_json(&body(value)).unwrap_err().field
}

fn local(bind_port: Value) -> Value {
    json!({"type": "local", "bind_port": bind_port, "target_host": "db", "target_port": 5432})
}

/// What `from_directive` reads from a whole config line.
fn read(line: &str) -> Result<ForwardSpec, String> {
    let (keyword, rest) = split_keyword(line);
    ForwardSpec::from_directive(keyword, &split_args(rest).unwrap())
}

#[test]
fn type_is_required_and_one_of_three_words() {
    assert_eq!(refused(json!({"bind_port": 1080})), "type");
    assert_eq!(refused(json!({"type": "Local", "bind_port": 1080})), "type");
    assert_eq!(refused(json!({"type": null, "bind_port": 1080})), "type");
    assert_eq!(
        spec(json!({"type": "dynamic", "bind_port": 1080})).kind,
        ForwardKind::Dynamic
    );
}

#[test]
fn bind_port_is_1_to_65535_and_0_only_for_remote() {
    assert_eq!(refused(local(json!(0))), "bind_port");
    assert_eq!(spec(local(json!(1))).bind_port, Some(1));
    assert_eq!(spec(local(json!(65535))).bind_port, Some(65535));
    assert_eq!(refused(local(json!(65536))), "bind_port");
    assert_eq!(refused(local(json!(-1))), "bind_port");
    assert_eq!(refused(local(json!("8080"))), "bind_port");
    assert_eq!(refused(local(json!(80.5))), "bind_port");
    assert_eq!(
        refused(json!({"type": "dynamic", "bind_port": 0})),
        "bind_port"
    );
    let remote =
        spec(json!({"type": "remote", "bind_port": 0, "target_host": "h", "target_port": 1}));
    assert_eq!(remote.bind_port, Some(0));
    assert_eq!(
        spec(json!({"type": "remote", "bind_port": 0})).target_host,
        None
    );
}

#[test]
fn exactly_one_of_bind_port_and_bind_socket() {
    let both = json!({"type": "local", "bind_port": 1, "bind_socket": "/tmp/a",
                      "target_host": "h", "target_port": 1});
    assert_eq!(refused(both), "bind_socket");
    assert_eq!(
        refused(json!({"type": "local", "target_host": "h", "target_port": 1})),
        "bind_port"
    );
    let socket = spec(
        json!({"type": "local", "bind_socket": "/tmp/a.sock", "target_host": "h", "target_port": 1}),
    );
    assert_eq!(socket.bind_socket.as_deref(), Some("/tmp/a.sock"));
}

#[test]
fn socket_is_absolute_at_most_103_bytes_without_colon_control_or_dollar_brace() {
    let with = |path: &str| json!({"type": "remote", "bind_socket": path, "target_host": "h", "target_port": 1});
    let at_limit = format!("/{}", "a".repeat(102));
    assert_eq!(spec(with(&at_limit)).bind_socket.unwrap().len(), 103);
    assert_eq!(
        refused(with(&format!("/{}", "a".repeat(103)))),
        "bind_socket"
    );
    // 103 bytes counted as bytes: 51 two-byte characters and the slash make 103.
    assert!(ForwardSpec::from_json(&body(with(&format!("/{}", "é".repeat(51))))).is_ok());
    assert_eq!(
        refused(with(&format!("/{}", "é".repeat(52)))),
        "bind_socket"
    );
    assert_eq!(refused(with("tmp/a.sock")), "bind_socket");
    assert_eq!(refused(with("")), "bind_socket");
    assert_eq!(refused(with("/tmp/a:b.sock")), "bind_socket");
    assert_eq!(refused(with("/tmp/a\nb")), "bind_socket");
    assert_eq!(refused(with("/tmp/${HOME}.sock")), "bind_socket");
    assert!(ForwardSpec::from_json(&body(with("/tmp/$HOME %h #a b.sock"))).is_ok());
    let target = json!({"type": "local", "bind_port": 1, "target_socket": "/run/a:b"});
    assert_eq!(refused(target), "target_socket");
}

#[test]
fn bind_address_forms_kept_and_refused() {
    for good in [
        "localhost",
        "*",
        "127.0.0.1",
        "0.0.0.0",
        "192.168.1.2",
        "[::1]",
        "[::]",
        "[2001:db8::1]",
    ] {
        let body = json!({"type": "dynamic", "bind_address": good, "bind_port": 1080});
        assert_eq!(spec(body).bind_address.as_deref(), Some(good), "{good}");
    }
    for bad in [
        "[::1",
        "::1",
        "::1]",
        "256.1.1.1",
        "host.example",
        "",
        "LOCALHOST",
        "[127.0.0.1]",
        "[*]",
        " *",
        "1.2.3",
    ] {
        let body = json!({"type": "dynamic", "bind_address": bad, "bind_port": 1080});
        assert_eq!(refused(body), "bind_address", "{bad:?}");
    }
    let on_socket = json!({"type": "local", "bind_address": "*", "bind_socket": "/tmp/a",
                           "target_host": "h", "target_port": 1});
    assert_eq!(refused(on_socket), "bind_address");
    assert_eq!(
        refused(json!({"type": "dynamic", "bind_address": 1, "bind_port": 1})),
        "bind_address"
    );
}

#[test]
fn local_needs_exactly_one_target() {
    assert_eq!(
        refused(json!({"type": "local", "bind_port": 1})),
        "target_host"
    );
    assert_eq!(
        refused(json!({"type": "local", "bind_port": 1, "target_host": "h"})),
        "target_port"
    );
    assert_eq!(
        refused(json!({"type": "local", "bind_port": 1, "target_port": 1})),
        "target_host"
    );
    let both = json!({"type": "local", "bind_port": 1, "target_host": "h", "target_port": 1,
                      "target_socket": "/tmp/t"});
    assert_eq!(refused(both), "target_socket");
    assert_eq!(
        refused(json!({"type": "local", "bind_port": 1, "target_host": "h", "target_port": 0})),
        "target_port"
    );
    assert_eq!(
        refused(json!({"type": "local", "bind_port": 1, "target_host": "h", "target_port": 65536})),
        "target_port"
    );
    let top =
        spec(json!({"type": "local", "bind_port": 1, "target_host": "h", "target_port": 65535}));
    assert_eq!(top.target_port, Some(65535));
    let socket = spec(json!({"type": "local", "bind_port": 1, "target_socket": "/tmp/t"}));
    assert_eq!(socket.target_socket.as_deref(), Some("/tmp/t"));
}

#[test]
fn target_host_is_a_bare_name_or_ip_and_ipv6_is_held_without_brackets() {
    let with = |host: &str| json!({"type": "local", "bind_port": 1, "target_host": host, "target_port": 80});
    assert_eq!(spec(with("[::1]")).target_host.as_deref(), Some("::1"));
    assert_eq!(spec(with("::1")).target_host.as_deref(), Some("::1"));
    assert_eq!(
        spec(with("db.internal")).target_host.as_deref(),
        Some("db.internal")
    );
    assert_eq!(
        spec(with("10.0.0.1")).target_host.as_deref(),
        Some("10.0.0.1")
    );
    for bad in [
        "",
        "[db]",
        "[::1",
        "db:80",
        "a b",
        "user@db",
        "%h",
        "256.1.1.1",
    ] {
        assert_eq!(refused(with(bad)), "target_host", "{bad:?}");
    }
}

#[test]
fn dynamic_has_no_target_and_no_socket() {
    assert_eq!(
        refused(json!({"type": "dynamic", "bind_port": 1, "target_host": "h"})),
        "target_host"
    );
    assert_eq!(
        refused(json!({"type": "dynamic", "bind_port": 1, "target_port": 2})),
        "target_port"
    );
    assert_eq!(
        refused(json!({"type": "dynamic", "bind_port": 1, "target_socket": "/t"})),
        "target_socket"
    );
    assert_eq!(
        refused(json!({"type": "dynamic", "bind_socket": "/tmp/d"})),
        "bind_socket"
    );
}

#[test]
fn remote_has_one_target_or_none_and_remote_dynamic_binds_a_port() {
    let dynamic = spec(json!({"type": "remote", "bind_port": 1080}));
    assert_eq!((dynamic.target_host, dynamic.target_socket), (None, None));
    assert_eq!(
        refused(json!({"type": "remote", "bind_socket": "/tmp/r"})),
        "bind_socket"
    );
    assert!(ForwardSpec::from_json(&body(
        json!({"type": "remote", "bind_socket": "/tmp/r", "target_socket": "/tmp/l"})
    ))
    .is_ok());
    assert_eq!(
        refused(json!({"type": "remote", "bind_port": 1, "target_host": "h"})),
        "target_port"
    );
}

#[test]
fn patched_replaces_present_fields_clears_null_and_checks_the_whole() {
    let base = spec(local(json!(8080)));
    let moved = base.patched(&body(json!({"bind_port": 9090}))).unwrap();
    assert_eq!(
        (moved.bind_port, moved.target_host.as_deref()),
        (Some(9090), Some("db"))
    );
    let to_socket = base
        .patched(&body(json!({"bind_port": null, "bind_socket": "/tmp/s"})))
        .unwrap();
    assert_eq!(
        (to_socket.bind_port, to_socket.bind_socket.as_deref()),
        (None, Some("/tmp/s"))
    );
    assert_eq!(
        base.patched(&body(json!({"bind_socket": "/tmp/s"})))
            .unwrap_err()
            .field,
        "bind_socket"
    );
    assert_eq!(
        base.patched(&body(json!({"type": "dynamic"})))
            .unwrap_err()
            .field,
        "target_host"
    );
    let dynamic = base
        .patched(&body(
            json!({"type": "dynamic", "target_host": null, "target_port": null}),
        ))
        .unwrap();
    assert_eq!(dynamic.kind, ForwardKind::Dynamic);
    assert_eq!(
        base.patched(&body(json!({"type": "nope"})))
            .unwrap_err()
            .field,
        "type"
    );
    assert_eq!(base.patched(&Map::new()).unwrap(), base);
}

#[test]
fn warnings_name_a_non_loopback_bind_per_kind() {
    let with = |kind: &str, address: &str| {
        let mut value = json!({"type": kind, "bind_address": address, "bind_port": 1});
        if kind != "dynamic" {
            value["target_host"] = json!("h");
            value["target_port"] = json!(1);
        }
        spec(value).warnings()
    };
    for loopback in ["localhost", "127.0.0.1", "127.9.9.9", "[::1]"] {
        assert!(with("local", loopback).is_empty(), "{loopback}");
        assert!(with("remote", loopback).is_empty(), "{loopback}");
    }
    for open in ["*", "0.0.0.0", "[::]", "192.168.1.2"] {
        assert!(
            with("local", open)[0].contains("other machines can reach"),
            "{open}"
        );
        assert!(
            with("dynamic", open)[0].contains("other machines can reach"),
            "{open}"
        );
        assert!(
            with("remote", open)[0].contains("GatewayPorts clientspecified"),
            "{open}"
        );
    }
    assert!(spec(local(json!(1))).warnings().is_empty());
}

#[test]
fn directive_writes_openssh_forms() {
    let line = |value: Value| spec(value).directive();
    assert_eq!(line(local(json!(8080))), "LocalForward 8080 db:5432");
    assert_eq!(
        line(
            json!({"type": "local", "bind_address": "[::1]", "bind_port": 8080,
                    "target_host": "[::1]", "target_port": 80})
        ),
        "LocalForward [::1]:8080 [::1]:80"
    );
    assert_eq!(
        line(
            json!({"type": "local", "bind_address": "*", "bind_port": 8080,
                    "target_host": "2001:db8::1", "target_port": 80})
        ),
        "LocalForward *:8080 [2001:db8::1]:80"
    );
    assert_eq!(
        line(json!({"type": "remote", "bind_port": 1080})),
        "RemoteForward 1080"
    );
    assert_eq!(
        line(json!({"type": "remote", "bind_port": 0})),
        "RemoteForward 0"
    );
    assert_eq!(
        line(json!({"type": "dynamic", "bind_address": "0.0.0.0", "bind_port": 1080})),
        "DynamicForward 0.0.0.0:1080"
    );
    // A socket path is quoted when it has a blank, quote or #, and % is written %%
    // (ssh expands % tokens in forward socket paths).
    assert_eq!(
        line(json!({"type": "local", "bind_socket": "/tmp/my app%h.sock",
                    "target_socket": "/run/\"db\".sock"})),
        r#"LocalForward "/tmp/my app%%h.sock" "/run/\"db\".sock""#
    );
    // ssh -G reads `"/tmp/a\\b"` as /tmp/ab: a forward field takes a backslash as an
    // escape after the line's own quoting, so a backslash is written four times.
    assert_eq!(
        line(
            json!({"type": "remote", "bind_socket": "/tmp/a\\b", "target_host": "h",
                    "target_port": 1})
        ),
        r#"RemoteForward "/tmp/a\\\\b" h:1"#
    );
}

/// Each line below is read by `ssh -G` (OpenSSH 9.2) as the forward this test expects.
#[test]
fn from_directive_reads_what_ssh_reads() {
    let r = read("LocalForward 8080 localhost:80").unwrap();
    assert_eq!(
        (r.bind_port, r.target_host.as_deref(), r.target_port),
        (Some(8080), Some("localhost"), Some(80))
    );
    let r = read("localforward [::1]:8080 [::1]:80").unwrap();
    assert_eq!(
        (r.bind_address.as_deref(), r.target_host.as_deref()),
        (Some("[::1]"), Some("::1"))
    );
    // ssh -G prints `[*]:8080` and `[localhost]:8080`: brackets around any address.
    assert_eq!(
        read("LocalForward [*]:8080 h:80")
            .unwrap()
            .bind_address
            .as_deref(),
        Some("*")
    );
    assert_eq!(
        read("LocalForward [localhost]:8080 [h]:80")
            .unwrap()
            .bind_address
            .as_deref(),
        Some("localhost")
    );
    assert_eq!(
        read("LocalForward=8080 h:080").unwrap().target_port,
        Some(80)
    );
    assert_eq!(
        read("LocalForward \"8080\" \"h:80\"").unwrap().bind_port,
        Some(8080)
    );
    let r = read("RemoteForward 1080").unwrap();
    assert_eq!(
        (r.kind, r.target_host, r.target_socket),
        (ForwardKind::Remote, None, None)
    );
    assert_eq!(read("RemoteForward 0 h:80").unwrap().bind_port, Some(0));
    assert_eq!(
        read("DynamicForward *:1080")
            .unwrap()
            .bind_address
            .as_deref(),
        Some("*")
    );
    // ssh -G expands %h in a socket path and reads %% as %; we keep %% only.
    assert_eq!(
        read("LocalForward /tmp/%%.sock h:80")
            .unwrap()
            .bind_socket
            .as_deref(),
        Some("/tmp/%.sock")
    );
    assert_eq!(
        read("RemoteForward 9000 \"/tmp/a b.sock\"")
            .unwrap()
            .target_socket
            .as_deref(),
        Some("/tmp/a b.sock")
    );
}

/// What ssh refuses ("Bad forwarding specification", "Missing target argument") and
/// what ssh reads but this service does not keep.
#[test]
fn from_directive_refuses_with_a_reason() {
    for line in [
        "LocalForward 8080:h:80",       // ssh: Missing target argument
        "LocalForward 8080",            // ssh: Missing target argument
        "LocalForward 8080 ::1:80",     // ssh: Bad forwarding specification
        "LocalForward ::1:8080 h:80",   // ssh: Bad forwarding specification
        "LocalForward [::1:8080 h:80",  // ssh: Bad forwarding specification
        "LocalForward 0 h:80",          // ssh: Bad forwarding specification
        "LocalForward 65536 h:80",      // ssh: Bad forwarding specification
        "LocalForward 8080 h:0",        // ssh: Bad forwarding specification
        "LocalForward 8080 h",          // ssh: Bad forwarding specification
        "LocalForward 8080 h:80 extra", // ssh: garbage at end of line
        "RemoteForward 9000:h:80",      // ssh: Bad forwarding specification
        "DynamicForward 0",             // ssh: Bad forwarding specification
        "DynamicForward 1080 h:80",     // ssh: garbage at end of line
        "DynamicForward",
        "LocalForward /tmp/a:b.sock h:80", // ssh: Bad forwarding specification
        "LocalForward /tmp/${HOME}.sock h:80", // ssh expands ${HOME}; no escape for it
    ] {
        assert!(read(line).is_err(), "{line}");
    }
    // ssh reads these, this service does not keep them.
    for (line, reason) in [
        (
            "LocalForward example.com:8080 h:80",
            "host name other than localhost",
        ),
        ("LocalForward 256.1.1.1:8080 h:80", "bind address"),
        ("LocalForward :8080 h:80", "empty bind address"),
        ("LocalForward 8080 h:http", "decimal"),
        ("LocalForward 8080 h:+80", "decimal"),
        ("LocalForward 8080 :80", "target host"),
        ("LocalForward tmp/a.sock h:80", "absolute"),
        ("LocalForward 8080 h/80", "absolute"),
        ("LocalForward /tmp/%h.sock h:80", "token ssh expands"),
        // The field's backslash escape comes first, then % expansion: still %h.
        ("LocalForward /tmp/\\\\%h.sock h:80", "token ssh expands"),
        ("LocalForward \"/tmp/a\\\\\" h:80", "lone \\"),
        ("RemoteForward /tmp/r.sock", "binds a port only"),
        ("DynamicForward /tmp/d.sock", "port only"),
        ("ForwardAgent yes", "not a forward directive"),
    ] {
        let error = read(line).unwrap_err();
        assert!(error.contains(reason), "{line}: {error}");
    }
}

fn listen(kind: &str, address: Option<&str>, port: u16) -> ForwardSpec {
    let mut value = json!({"type": kind, "bind_address": address, "bind_port": port});
    if kind != "dynamic" {
        value["target_host"] = json!("h");
        value["target_port"] = json!(1);
    }
    spec(value)
}

#[test]
fn overlap_follows_port_conflict_address_rules() {
    let overlaps = |a: Option<&str>, b: Option<&str>| {
        let (a, b) = (listen("local", a, 8080), listen("dynamic", b, 8080));
        assert_eq!(a.overlaps(&b), b.overlaps(&a), "symmetric");
        a.overlaps(&b)
    };
    for (a, b) in [
        (None, None),
        (None, Some("localhost")),
        (None, Some("127.0.0.1")),
        (None, Some("[::1]")),
        (Some("*"), Some("192.168.1.2")),
        (Some("*"), Some("[2001:db8::1]")),
        (Some("*"), None),
        (Some("0.0.0.0"), Some("10.1.1.1")),
        (Some("0.0.0.0"), Some("*")),
        (Some("0.0.0.0"), Some("localhost")),
        (Some("0.0.0.0"), Some("127.0.0.5")),
        (Some("[::]"), Some("[2001:db8::1]")),
        (Some("[::]"), None),
        (Some("[::]"), Some("[::1]")),
        (Some("[::1]"), Some("[0:0::1]")),
        (Some("10.0.0.1"), Some("10.0.0.1")),
    ] {
        assert!(overlaps(a, b), "{a:?} {b:?}");
    }
    for (a, b) in [
        (None, Some("127.0.0.2")),
        (None, Some("10.0.0.1")),
        (Some("0.0.0.0"), Some("[::]")),
        (Some("0.0.0.0"), Some("[::1]")),
        (Some("[::]"), Some("127.0.0.1")),
        (Some("10.0.0.1"), Some("10.0.0.2")),
    ] {
        assert!(!overlaps(a, b), "{a:?} {b:?}");
    }
}

#[test]
fn overlap_needs_the_same_port_or_socket_and_local_or_dynamic_kinds() {
    assert!(!listen("local", None, 8080).overlaps(&listen("local", None, 8081)));
    assert!(!listen("local", None, 8080).overlaps(&listen("remote", None, 8080)));
    assert!(!listen("remote", Some("*"), 8080).overlaps(&listen("remote", Some("*"), 8080)));
    let socket = |path: &str| {
        spec(json!({"type": "local", "bind_socket": path, "target_host": "h", "target_port": 1}))
    };
    assert!(socket("/tmp/a").overlaps(&socket("/tmp/a")));
    assert!(!socket("/tmp/a").overlaps(&socket("/tmp/b")));
    assert!(!socket("/tmp/a").overlaps(&listen("local", None, 8080)));
}

#[test]
fn settings_patch_booleans_and_a_trimmed_one_line_description_of_200_characters() {
    let base = ForwardSettings::default();
    assert!(base.enabled && base.autostart && base.description.is_empty());
    let patched = base
        .patched(&body(
            json!({"enabled": false, "autostart": false, "description": "  db  "}),
        ))
        .unwrap();
    assert_eq!(
        (
            patched.enabled,
            patched.autostart,
            patched.description.as_str()
        ),
        (false, false, "db")
    );
    assert_eq!(patched.patched(&Map::new()).unwrap(), patched);
    let at_limit = "é".repeat(200);
    assert_eq!(
        base.patched(&body(json!({"description": at_limit})))
            .unwrap()
            .description
            .chars()
            .count(),
        200
    );
    let over = "é".repeat(201);
    assert_eq!(
        base.patched(&body(json!({"description": over})))
            .unwrap_err()
            .field,
        "description"
    );
    assert_eq!(
        base.patched(&body(json!({"description": "a\nb"})))
            .unwrap_err()
            .field,
        "description"
    );
    assert_eq!(
        base.patched(&body(json!({"description": 1})))
            .unwrap_err()
            .field,
        "description"
    );
    assert_eq!(
        base.patched(&body(json!({"enabled": "yes"})))
            .unwrap_err()
            .field,
        "enabled"
    );
    assert_eq!(
        base.patched(&body(json!({"autostart": null})))
            .unwrap_err()
            .field,
        "autostart"
    );
}

/// A random valid spec: every kind, address form, socket and target form.
pub(crate) fn random_spec(rng: &mut Rng) -> ForwardSpec {
    let kind = *rng.pick(&[
        ForwardKind::Local,
        ForwardKind::Remote,
        ForwardKind::Dynamic,
    ]);
    let addresses = [
        None,
        Some("localhost"),
        Some("*"),
        Some("127.0.0.1"),
        Some("0.0.0.0"),
        Some("[::1]"),
        Some("[::]"),
        Some("[2001:db8::7]"),
    ];
    let paths = [
        "/tmp/a.sock",
        "/run/my app/%h.sock",
        "/tmp/\"q\"#'\\.sock",
        "/tmp/100%%",
        "/tmp/é ü",
    ];
    let hosts = [
        "db.internal",
        "localhost",
        "10.0.0.1",
        "::1",
        "2001:db8::1",
        "h",
    ];
    let port = |rng: &mut Rng, low: u16| low.max(1 + rng.below(65535) as u16);
    let mut spec = ForwardSpec::empty(kind);
    let wants_target = match kind {
        ForwardKind::Local => true,
        ForwardKind::Remote => rng.below(3) != 0,
        ForwardKind::Dynamic => false,
    };
    if kind != ForwardKind::Dynamic && wants_target && rng.below(3) == 0 {
        spec.bind_socket = Some(rng.pick(&paths).to_string());
    } else {
        spec.bind_address = rng.pick(&addresses).map(str::to_owned);
        spec.bind_port = Some(match (kind, rng.below(8)) {
            (ForwardKind::Remote, 0) => 0,
            (_, 1) => 65535,
            _ => port(rng, 1),
        });
    }
    if wants_target {
        if rng.below(3) == 0 {
            spec.target_socket = Some(rng.pick(&paths).to_string());
        } else {
            spec.target_host = Some(rng.pick(&hosts).to_string());
            spec.target_port = Some(port(rng, 1));
        }
    }
    spec
}

#[test]
fn random_valid_specs_survive_directive_and_from_directive() {
    let (iterations, seed) = settings("forward directive round trip", 0xF0F0_5EED);
    let mut rng = Rng::new(seed);
    for _ in 0..iterations.min(20_000) {
        let spec = random_spec(&mut rng);
        let json = serde_json::to_value(&spec).unwrap();
        assert_eq!(
            ForwardSpec::from_json(json.as_object().unwrap()),
            Ok(spec.clone())
        );
        let line = spec.directive();
        assert_eq!(read(&line), Ok(spec.clone()), "{line}");
    }
}
