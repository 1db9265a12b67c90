//! Real tunnels through a test sshd: first from a hand-written config (the rig itself),
//! then from the service's exported config (`ssh -N -F <export> <alias>`).

use super::net::{echo_via, echo_via_socks, free_port, Echo, SocksTarget, Tunnel};
use super::{client_key, forward_sshd, work_dir};
use crate::interop::current_user;

#[test]
fn a_hand_written_config_carries_local_dynamic_and_remote_forwards_through_the_test_sshd() {
    let sshd = forward_sshd("fwd-rig-sshd");
    let dir = work_dir("fwd-rig");
    let (key, public) = client_key(&dir);
    sshd.authorize(&public);
    let echo = Echo::start();
    let (local, dynamic, remote) = (free_port(), free_port(), free_port());
    let config = dir.join("config");
    std::fs::write(
        &config,
        format!(
            "Host tun\n    HostName 127.0.0.1\n    Port {}\n    User {}\n    IdentityFile {}\n    \
             IdentitiesOnly yes\n    LocalForward {local} 127.0.0.1:{}\n    \
             DynamicForward {dynamic}\n    RemoteForward {remote} 127.0.0.1:{}\n",
            sshd.port,
            current_user(),
            key.display(),
            echo.port,
            echo.port
        ),
    )
    .unwrap();
    let mut tunnel = Tunnel::start(&config, "tun");
    tunnel.wait_for("local forward", || echo_via(local));
    tunnel.wait_for("dynamic forward by IPv4", || {
        echo_via_socks(dynamic, SocksTarget::Ipv4([127, 0, 0, 1], echo.port))
    });
    tunnel.wait_for("dynamic forward by name", || {
        echo_via_socks(dynamic, SocksTarget::Domain("localhost", echo.port))
    });
    tunnel.wait_for("remote forward", || echo_via(remote));
}

/// A forward rule body for the exported-config tests.
fn rule(kind: &str, port: u16, target: Option<u16>) -> serde_json::Value {
    let mut body = serde_json::json!({"type": kind, "bind_port": port});
    if let Some(target) = target {
        body["target_host"] = serde_json::json!("127.0.0.1");
        body["target_port"] = serde_json::json!(target);
    }
    body
}

#[test]
fn the_exported_config_carries_local_dynamic_and_remote_forwards_through_ssh() {
    let sshd = super::forward_sshd("fwd-export-tunnels-sshd");
    let service = crate::support::Service::start("fwd-export-tunnels");
    let dir = work_dir("fwd-export-tunnels");
    let echo = Echo::start();
    // The dynamic rule is the group's: a group's rules reach ssh through each host's block.
    let group = service.new_group("fleet");
    let (id, answer) = super::sshd_host(
        &service,
        &sshd,
        "tunnels",
        serde_json::json!({"group_id": group}),
    );
    let rules = super::host_rules(&id);
    let (local, dynamic, remote, remote_socks, disabled) = (
        free_port(),
        free_port(),
        free_port(),
        free_port(),
        free_port(),
    );
    super::add_rule(&service, &rules, rule("local", local, Some(echo.port)));
    super::add_rule(
        &service,
        &super::group_rules(&group),
        rule("dynamic", dynamic, None),
    );
    super::add_rule(&service, &rules, rule("remote", remote, Some(echo.port)));
    super::add_rule(&service, &rules, rule("remote", remote_socks, None));
    // The disabled rule's port is held by the test: had ssh been told to bind it, the
    // export's ExitOnForwardFailure would end ssh before any forward worked.
    let held = std::net::TcpListener::bind(("127.0.0.1", disabled)).unwrap();
    let mut off = rule("local", disabled, Some(echo.port));
    off["bind_address"] = serde_json::json!("127.0.0.1");
    off["enabled"] = serde_json::json!(false);
    super::add_rule(&service, &rules, off);
    let config = super::usable_export(&service, &answer, &dir);
    let export = std::fs::read_to_string(&config).unwrap();
    let mut tunnel = Tunnel::start(&config, &super::alias_in(&export, "tunnels"));
    tunnel.wait_for("local forward", || echo_via(local));
    tunnel.wait_for("dynamic forward by IPv4", || {
        echo_via_socks(dynamic, SocksTarget::Ipv4([127, 0, 0, 1], echo.port))
    });
    tunnel.wait_for("dynamic forward by name", || {
        echo_via_socks(dynamic, SocksTarget::Domain("localhost", echo.port))
    });
    tunnel.wait_for("remote forward, on the server's loopback", || {
        echo_via(remote)
    });
    tunnel.wait_for("remote dynamic forward", || {
        echo_via_socks(remote_socks, SocksTarget::Ipv4([127, 0, 0, 1], echo.port))
    });
    // ssh binds every local forward before it serves any, so it tried no bind of the
    // held port: it is still up.
    tunnel.wait_for("ssh still up beside the held port", || true);
    assert!(export.contains("# LocalForward 127.0.0.1:"), "{export}");
    drop(held);
}

#[test]
fn the_exported_exit_on_forward_failure_makes_ssh_fail_when_a_rules_port_is_busy() {
    let sshd = super::forward_sshd("fwd-export-busy-sshd");
    let service = crate::support::Service::start("fwd-export-busy");
    let dir = work_dir("fwd-export-busy");
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port();
    let (id, answer) = super::sshd_host(&service, &sshd, "busy", serde_json::json!({}));
    // On 127.0.0.1 alone: with no address ssh binds [::1] too, and one bound address is
    // success to it.
    let mut local = rule("local", port, Some(1));
    local["bind_address"] = serde_json::json!("127.0.0.1");
    super::add_rule(&service, &super::host_rules(&id), local);
    let config = super::usable_export(&service, &answer, &dir);
    let export = std::fs::read_to_string(&config).unwrap();
    // No ExitOnForwardFailure of the test's own: the export's line decides.
    let mut tunnel = Tunnel::start_with(&config, &super::alias_in(&export, "busy"), &[]);
    let status = tunnel.wait_exit();
    assert!(
        status.is_some_and(|status| !status.success()),
        "ssh went on with a forward it could not bind (exit: {status:?}); log:\n{}\nexport:\n{export}",
        tunnel.log()
    );
    drop(busy);
}

/// The port ssh says the server allocated for a `RemoteForward 0` (its log line
/// `Allocated port N for remote forward to ...`).
fn allocated_port(log: &str) -> Option<u16> {
    log.lines()
        .find_map(|line| line.strip_prefix("Allocated port "))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|port| port.parse().ok())
}

#[test]
fn an_exported_remote_rule_on_port_0_gets_a_port_from_the_server_that_reaches_the_target() {
    let sshd = super::forward_sshd("fwd-export-remote0-sshd");
    let service = crate::support::Service::start("fwd-export-remote0");
    let dir = work_dir("fwd-export-remote0");
    let echo = Echo::start();
    let (id, answer) = super::sshd_host(&service, &sshd, "remote0", serde_json::json!({}));
    super::add_rule(
        &service,
        &super::host_rules(&id),
        rule("remote", 0, Some(echo.port)),
    );
    let config = super::usable_export(&service, &answer, &dir);
    let export = std::fs::read_to_string(&config).unwrap();
    let mut tunnel = Tunnel::start(&config, &super::alias_in(&export, "remote0"));
    let log = tunnel.log_path();
    let mut port = None;
    tunnel.wait_for("the allocated port", || {
        port = allocated_port(&std::fs::read_to_string(&log).unwrap_or_default());
        port.is_some()
    });
    let port = port.unwrap();
    tunnel.wait_for("the remote forward on the allocated port", || {
        echo_via(port)
    });
}
