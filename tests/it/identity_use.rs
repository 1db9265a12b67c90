//! Identities in use (docs/identities.md): a rotation of an identity's password reaches
//! `connect` of every host that resolves to it, directly or through a group default; real
//! logins to a test sshd through an identity's key and through its password; the
//! keyboard-interactive answers and the TOTP code `connect` hands out.

use serde_json::{json, Value};

use crate::interop::{assert_logged_in, current_user, Sshd};
use crate::support::{fresh_dir, id_of, Service};

fn identity(service: &Service, body: Value) -> String {
    id_of(&service.post("/api/identities", &body).expect(201))
}

fn host(service: &Service, name: &str, body: Value) -> String {
    let mut full = json!({"name": name, "hostname": "127.0.0.1"});
    for (key, value) in body.as_object().unwrap() {
        full[key] = value.clone();
    }
    id_of(&service.post("/api/hosts", &full).expect(201))
}

fn connect(service: &Service, id: &str) -> Value {
    service
        .post(&format!("/api/hosts/{id}/connect"), &json!({}))
        .expect(200)
}

/// The password method's opened password in `connect`'s credentials.
fn password_of(answer: &Value) -> String {
    answer["credentials"]["methods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|method| method["type"] == "password")
        .and_then(|method| method["password"].as_str())
        .unwrap_or_else(|| panic!("no password method: {answer}"))
        .to_owned()
}

#[test]
fn a_password_rotation_reaches_connect_of_every_host_that_resolves_to_the_identity() {
    let service = Service::start("identity-rotation");
    let ops = identity(
        &service,
        json!({"name": "ops", "username": "deploy", "auth": [{"type": "password", "password": "spring-2026"}]}),
    );
    let group = id_of(
        &service
            .post(
                "/api/groups",
                &json!({"name": "fleet", "defaults": {"identity_id": ops}}),
            )
            .expect(201),
    );
    let child = id_of(
        &service
            .post("/api/groups", &json!({"name": "rack", "parent_id": group}))
            .expect(201),
    );
    let direct = host(&service, "direct", json!({"identity_id": ops}));
    let in_group = host(&service, "in-group", json!({"group_id": group}));
    let below = host(&service, "below", json!({"group_id": child}));
    let own = host(
        &service,
        "own",
        json!({"group_id": group, "username": "me", "auth": {"type": "password", "password": "mine"}}),
    );
    for id in [&direct, &in_group, &below] {
        let answer = connect(&service, id);
        assert_eq!(password_of(&answer), "spring-2026");
        assert_eq!(answer["credentials"]["username"], "deploy");
        assert_eq!(answer["effective"]["identity_id"], json!(ops));
    }
    let rotated = service
        .put(
            &format!("/api/identities/{ops}"),
            &json!({"auth": [{"type": "password", "password": "autumn-2026"}]}),
        )
        .expect(200);
    assert_eq!(rotated["affected_hosts"], 3, "{rotated}");
    for id in [&direct, &in_group, &below] {
        assert_eq!(password_of(&connect(&service, id)), "autumn-2026");
    }
    let mine = connect(&service, &own);
    assert_eq!(
        mine["credentials"]["password"], "mine",
        "a host's own auth wins"
    );
    assert_eq!(mine["credentials"]["username"], "me");
}

#[test]
fn ssh_logs_in_to_the_test_sshd_with_an_identitys_key() {
    let sshd = Sshd::start("identity-key-sshd");
    let service = Service::start("identity-key");
    let key = service
        .post("/api/keys", &json!({"name": "id-key", "type": "ed25519"}))
        .expect(201);
    sshd.authorize(key["public_key"].as_str().unwrap());
    let ops = identity(
        &service,
        json!({"name": "key-login", "username": current_user(), "auth": [{"type": "key", "key_id": key["id"]}]}),
    );
    let id = host(
        &service,
        "sshd",
        json!({"port": sshd.port, "identity_id": ops}),
    );
    let answer = connect(&service, &id);
    let method = &answer["credentials"]["methods"][0];
    assert_eq!(method["type"], "key", "{answer}");
    let file = sshd.dir.join("identity-key");
    {
        use crate::support::WithMode;
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .with_mode(0o600)
            .open(&file)
            .unwrap();
        std::io::Write::write_all(&mut out, method["private_key"].as_str().unwrap().as_bytes())
            .unwrap();
    }
    let user = answer["credentials"]["username"].as_str().unwrap();
    let output = sshd
        .ssh(user, &file, &["-o", "BatchMode=yes"])
        .args(["echo", "hello"])
        .env_remove("SSH_AUTH_SOCK")
        .output()
        .unwrap();
    assert_logged_in(&output, &sshd);
}

/// The account the password login uses: made by the test as root (CI runs as root), with
/// the password set through `chpasswd`.
fn local_account(name: &str, password: &str) -> bool {
    if current_user() != "root" {
        eprintln!("skipped: creating a local account for a password login needs root");
        return false;
    }
    let _ = std::process::Command::new("userdel").arg(name).output();
    let created = std::process::Command::new("useradd")
        .args(["--create-home", "--shell", "/bin/sh", name])
        .status()
        .expect("useradd runs");
    assert!(created.success(), "useradd {name}");
    let mut chpasswd = std::process::Command::new("chpasswd")
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("chpasswd runs");
    std::io::Write::write_all(
        chpasswd.stdin.as_mut().unwrap(),
        format!("{name}:{password}\n").as_bytes(),
    )
    .unwrap();
    assert!(chpasswd.wait().unwrap().success(), "chpasswd");
    true
}

#[test]
fn ssh_logs_in_to_the_test_sshd_with_an_identitys_password() {
    let account = "hm-identity-pw";
    let password = "Corr3ct-Horse-Battery";
    if !local_account(account, password) {
        return;
    }
    let sshd = Sshd::start_with_config("identity-password-sshd", "PasswordAuthentication yes\n");
    let service = Service::start("identity-password");
    let ops = identity(
        &service,
        json!({"name": "pw-login", "username": account, "auth": [{"type": "password", "password": password}]}),
    );
    let id = host(
        &service,
        "sshd",
        json!({"port": sshd.port, "identity_id": ops}),
    );
    let answer = connect(&service, &id);
    // The desktop app hands the password to ssh through SSH_ASKPASS; so does the test.
    let dir = fresh_dir("identity-password-askpass");
    let askpass = dir.join("askpass");
    let opened = password_of(&answer);
    std::fs::write(&askpass, format!("#!/bin/sh\nprintf '%s\\n' '{opened}'\n")).unwrap();
    crate::support::set_mode(&askpass, 0o700);
    let user = answer["credentials"]["username"].as_str().unwrap();
    let output = std::process::Command::new("ssh")
        .args(["-F", "/dev/null", "-o", "StrictHostKeyChecking=no"])
        .args(["-o", "UserKnownHostsFile=/dev/null"])
        .args([
            "-o",
            "PreferredAuthentications=password",
            "-o",
            "PubkeyAuthentication=no",
        ])
        .args(["-o", "NumberOfPasswordPrompts=1", "-o", "ConnectTimeout=60"])
        .arg("-p")
        .arg(sshd.port.to_string())
        .arg(format!("{user}@127.0.0.1"))
        .args(["echo", "hello"])
        .env("SSH_ASKPASS", &askpass)
        .env("SSH_ASKPASS_REQUIRE", "force")
        .env("DISPLAY", ":0")
        .env_remove("SSH_AUTH_SOCK")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let _ = std::process::Command::new("userdel")
        .args(["--remove", account])
        .output();
    assert_logged_in(&output, &sshd);
}

/// RFC 6238 with SHA-1 computed by Python's own hmac, for `unix_time`: an oracle outside
/// our code.
fn python_totp(secret_base32: &str, unix_time: u64) -> String {
    let script = format!(
        "import base64,hmac,hashlib,struct\n\
         k=base64.b32decode('{secret_base32}')\n\
         h=hmac.new(k,struct.pack('>Q',{unix_time}//30),hashlib.sha1).digest()\n\
         o=h[-1]&15\n\
         print('%06d'%((struct.unpack('>I',h[o:o+4])[0]&0x7fffffff)%1000000))"
    );
    let output = std::process::Command::new("python3")
        .args(["-c", &script])
        .output()
        .expect("python3 runs");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

#[test]
fn connect_answers_keyboard_interactive_rules_with_the_password_the_totp_code_and_literals() {
    let service = Service::start("identity-kbdint");
    let secret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ";
    let ops = identity(
        &service,
        json!({
            "name": "mfa", "username": "ops",
            "auth": [
                {"type": "password", "password": "pw-1"},
                {"type": "keyboard_interactive", "answers": [
                    {"prompt": "^Password:", "answer": {"type": "password"}},
                    {"prompt": "(?i)verification code", "answer": {"type": "totp"}},
                    {"prompt": "^Site:", "answer": {"type": "literal", "literal": "north"}}
                ]}
            ],
            "totp": {"secret": format!("otpauth://totp/ops?secret={secret}&issuer=corp")}
        }),
    );
    let id = host(&service, "mfa-host", json!({"identity_id": ops}));
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let answer = connect(&service, &id);
    let after = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let methods = answer["credentials"]["methods"].as_array().unwrap();
    let rules = methods
        .iter()
        .find(|method| method["type"] == "keyboard_interactive")
        .unwrap_or_else(|| panic!("{answer}"))["answers"]
        .as_array()
        .unwrap();
    assert_eq!(rules[0], json!({"prompt": "^Password:", "answer": "pw-1"}));
    assert_eq!(rules[2], json!({"prompt": "^Site:", "answer": "north"}));
    // The code of the window `connect` ran in (it may straddle a boundary).
    let code = rules[1]["answer"].as_str().unwrap();
    let expected = [python_totp(secret, before), python_totp(secret, after)];
    assert!(
        expected.contains(&code.to_owned()),
        "{code} not in {expected:?}"
    );
    assert_eq!(answer["credentials"]["totp"]["code"], code);
}

/// `connect?agent=true` of a host whose auth is an identity's key hands out no private key:
/// the key method names the agent, and `ssh` logs in through the agent's socket with the
/// public half alone.
#[test]
fn connect_via_the_agent_gives_an_identitys_key_as_the_agent_and_no_private_key() {
    let sshd = Sshd::start("identity-agent-sshd");
    let service = Service::start("identity-agent");
    let key = service
        .post(
            "/api/keys",
            &json!({"name": "agent-key", "type": "ed25519"}),
        )
        .expect(201);
    sshd.authorize(key["public_key"].as_str().unwrap());
    let ops = identity(
        &service,
        json!({"name": "via-agent", "username": current_user(), "auth": [{"type": "key", "key_id": key["id"]}]}),
    );
    let id = host(
        &service,
        "sshd",
        json!({"port": sshd.port, "identity_id": ops}),
    );
    let answer = service
        .post(&format!("/api/hosts/{id}/connect?agent=true"), &json!({}))
        .expect(200);
    assert!(!answer.to_string().contains("PRIVATE KEY"), "{answer}");
    let method = &answer["credentials"]["methods"][0];
    assert_eq!(method["type"], "key");
    assert_eq!(method["public_key"], key["public_key"]);
    let socket = service.get("/api/agent").expect(200)["socket"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(method["identity_agent"], json!(socket));
    let public_file = sshd.dir.join("agent-key.pub");
    std::fs::write(
        &public_file,
        format!("{}\n", method["public_key"].as_str().unwrap()),
    )
    .unwrap();
    let agent = format!("IdentityAgent={socket}");
    let output = sshd
        .ssh(
            answer["credentials"]["username"].as_str().unwrap(),
            &public_file,
            &["-o", &agent, "-o", "BatchMode=yes"],
        )
        .args(["echo", "hello"])
        .env_remove("SSH_AUTH_SOCK")
        .output()
        .unwrap();
    assert_logged_in(&output, &sshd);
}
