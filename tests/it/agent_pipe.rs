//! The SSH agent of the Windows build on its named pipe (docs/platforms.md, Platforms), run
//! under Wine by `scripts/test`: a Windows client (the pipe opened as a file, as Windows'
//! OpenSSH does) lists identities, gets signatures that verify, sees nothing while the vault
//! is locked, meets the connection cap and the message timeout, and has a zero-length write
//! ignored; the pipe's name falls back to the user's when
//! OpenSSH's is held, and the export's `IdentityAgent` line names the pipe.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::mpsc;
use std::time::Instant;

use serde_json::{json, Value};

use crate::agent_wire::{
    assert_a_stalled_message_closes_its_connection, assert_lists_and_signs_every_key_type,
    assert_locked_vault_lists_and_signs_nothing, closed, exchange, key_blob, waiting_sign_requests,
    DEADLINE, NO_IDENTITIES, REQUEST_IDENTITIES,
};
use crate::support::{Options, Service};

/// `ERROR_PIPE_BUSY`: every instance of the pipe has a client; the next one comes as soon
/// as the agent has taken the last client.
const ERROR_PIPE_BUSY: i32 = 231;

/// The agent's status; asserts it is served.
fn status(service: &Service) -> Value {
    let status = service.get("/api/agent").expect(200);
    assert_eq!(status["enabled"], true, "{status}");
    status
}

/// A client connection to the pipe `name`, waiting while every instance is busy.
fn connect(name: &str) -> File {
    let until = Instant::now() + DEADLINE;
    loop {
        match OpenOptions::new().read(true).write(true).open(name) {
            Ok(file) => return file,
            Err(err) if err.raw_os_error() == Some(ERROR_PIPE_BUSY) && Instant::now() < until => {
                std::thread::yield_now();
            }
            Err(err) => panic!("cannot open {name}: {err}"),
        }
    }
}

/// The pipe's name, as `GET /api/agent` gives it.
fn pipe(service: &Service) -> String {
    status(service)["socket"].as_str().unwrap().to_owned()
}

#[test]
fn the_pipe_lists_and_signs_with_ed25519_ecdsa_and_rsa_sha2_keys_whose_signatures_verify() {
    let service = Service::start("pipe-sign");
    let name = pipe(&service);
    assert_lists_and_signs_every_key_type(&service, || connect(&name));
}

#[test]
fn while_the_vault_is_locked_the_pipe_lists_no_key_and_gets_no_signature() {
    let service = Service::start("pipe-locked");
    let name = pipe(&service);
    assert_locked_vault_lists_and_signs_nothing(&service, || connect(&name));
}

/// The pipe's reads never block in the system, so the per-message timeout holds there too.
#[test]
fn a_message_that_stops_arriving_closes_its_pipe_connection_after_the_message_timeout() {
    let service = Service::start_env(
        "pipe-stalled",
        &[("HOST_MANAGER_TEST_AGENT_MESSAGE_TIMEOUT_MS", "200")],
    );
    let name = pipe(&service);
    assert_a_stalled_message_closes_its_connection(&service, || connect(&name));
}

#[test]
fn the_agent_takes_openssh_s_pipe_and_the_export_s_identity_agent_line_names_it() {
    let service = Service::start("pipe-name");
    let status = status(&service);
    let name = status["socket"].as_str().unwrap();
    assert_eq!(status["location"], "openssh_pipe", "{status}");
    assert!(
        name.starts_with("\\\\.\\pipe\\openssh-ssh-agent-"),
        "{name}"
    );
    assert_eq!(status["ssh_auth_sock"], name);
    let line = format!("IdentityAgent \"{}\"", name.replace('\\', "\\\\"));
    assert_eq!(status["identity_agent"], line.as_str());
    let key = service
        .post("/api/keys", &json!({"name": "k", "type": "ed25519"}))
        .expect(201);
    let auth = json!({"auth": {"type": "key", "key_id": key["id"]}});
    service
        .post(
            "/api/hosts",
            &crate::support::host_body("h", "h.example.com", auth),
        )
        .expect(201);
    let export = service.get("/api/export/ssh-config?agent=true").text();
    assert!(export.contains(&format!("    {line}\n")), "{export}");
}

#[test]
fn when_another_program_holds_openssh_s_pipe_the_agent_listens_on_the_user_s_own() {
    // Both services get the same pipe names: the second finds the first's pipe held.
    let suffix = "-pipe-held-test";
    let with_suffix = || Options {
        env: vec![
            ("HOST_MANAGER_TEST_AGENT_PIPE_SUFFIX".into(), suffix.into()),
            ("USERNAME".into(), "Ann Lee".into()),
        ],
        ..Options::default()
    };
    let first = Service::start_with("pipe-held-first", with_suffix());
    assert_eq!(status(&first)["location"], "openssh_pipe");
    let second = Service::start_with("pipe-held-second", with_suffix());
    let status = status(&second);
    assert_eq!(status["location"], "user_pipe", "{status}");
    let name = format!("\\\\.\\pipe\\host-manager-agent-Ann_Lee{suffix}");
    assert_eq!(status["socket"], name.as_str());
    assert!(second.stderr().contains("another program holds this pipe"));
    // Each answers on its own pipe: the second's key is listed by the second only.
    let key = second
        .post("/api/keys", &json!({"name": "k", "type": "ed25519"}))
        .expect(201);
    let listed = exchange(&mut connect(&name), &REQUEST_IDENTITIES).unwrap();
    assert_eq!(listed[..5], [12, 0, 0, 0, 1]);
    let openssh = format!("\\\\.\\pipe\\openssh-ssh-agent{suffix}");
    assert_eq!(
        exchange(&mut connect(&openssh), &REQUEST_IDENTITIES),
        Some(NO_IDENTITIES.to_vec())
    );
    drop(key);
}

#[test]
fn at_the_connection_cap_an_idle_pipe_connection_is_closed_so_a_new_client_is_served() {
    let service = Service::start("pipe-cap-idle");
    let name = pipe(&service);
    let mut open: Vec<File> = (0..64).map(|_| connect(&name)).collect();
    for stream in &mut open {
        assert_eq!(
            exchange(stream, &REQUEST_IDENTITIES),
            Some(NO_IDENTITIES.to_vec())
        );
    }
    let mut newcomer = connect(&name);
    assert_eq!(
        exchange(&mut newcomer, &REQUEST_IDENTITIES),
        Some(NO_IDENTITIES.to_vec())
    );
    crate::agent_wire::assert_one_idle_connection_made_room(&service, &mut open);
}

#[test]
fn at_the_connection_cap_with_every_pipe_connection_answering_a_new_one_is_refused() {
    let service = Service::start("pipe-cap-busy");
    let name = pipe(&service);
    service
        .put("/api/vault/password", &json!({ "new_password": "pw" }))
        .expect(200);
    let key = service
        .post("/api/keys", &json!({"name": "guarded", "type": "ed25519"}))
        .expect(201);
    let path = format!("/api/keys/{}", key["id"].as_str().unwrap());
    service
        .put(&path, &json!({ "agent": {"confirm": "always"} }))
        .expect(200);
    let waiting = waiting_sign_requests(&service, || connect(&name), &key_blob(&key), 64);
    let mut refused = connect(&name);
    assert!(
        closed(&mut refused),
        "no connection is idle: the new one is closed"
    );
    assert!(service
        .stderr()
        .contains("each answering a request; closed a new one"));
    assert_eq!(service.get("/api/agent").expect(200)["pending"], 64);
    service.post("/api/vault/lock", &json!({})).expect(200);
    for answer in waiting {
        assert_eq!(answer.join().unwrap(), Some(vec![5]));
    }
}

/// A zero-length write makes a zero-length message on the pipe; on a Unix socket it sends
/// nothing, so here too it is ignored: the next request is answered, and so are others'.
#[test]
fn a_zero_length_write_to_the_pipe_is_ignored_and_the_next_request_is_answered() {
    let service = Service::start("pipe-zero-length");
    let name = pipe(&service);
    let mut bystander = connect(&name);
    let mut client = connect(&name);
    assert_eq!(client.write(&[]).unwrap(), 0);
    // On its own thread, so a stalled connection fails the test instead of hanging it.
    let (answered, answer) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = answered.send(exchange(&mut client, &REQUEST_IDENTITIES));
    });
    assert_eq!(
        answer
            .recv_timeout(DEADLINE)
            .expect("the request after it is answered"),
        Some(NO_IDENTITIES.to_vec())
    );
    assert_eq!(
        exchange(&mut bystander, &REQUEST_IDENTITIES),
        Some(NO_IDENTITIES.to_vec())
    );
}
