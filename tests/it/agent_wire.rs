//! The SSH agent protocol as the black-box tests speak it, over any stream (a Unix socket,
//! or a Windows named pipe opened as a file): the framing, the requests the tests send, the
//! answers they read, and checking a signature with the key's public half.

use std::io::{Read, Write};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{wait_until, Service};

/// Generous: a condition polled for this long never holds by luck of timing.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// `SSH_AGENTC_REQUEST_IDENTITIES`.
pub const REQUEST_IDENTITIES: [u8; 1] = [11];

/// The answer to `REQUEST_IDENTITIES` when the agent offers no key.
pub const NO_IDENTITIES: [u8; 5] = [12, 0, 0, 0, 0];

/// `SSH_AGENT_RSA_SHA2_256` and `SSH_AGENT_RSA_SHA2_512`, a sign request's flags.
pub const RSA_SHA2_256: u32 = 2;
pub const RSA_SHA2_512: u32 = 4;

/// Sends one framed message on `stream`; the framed answer, or `None` at end of stream.
pub fn exchange(stream: &mut (impl Read + Write), message: &[u8]) -> Option<Vec<u8>> {
    stream
        .write_all(&(message.len() as u32).to_be_bytes())
        .ok()?;
    stream.write_all(message).ok()?;
    read_answer(stream)
}

pub fn read_answer(stream: &mut impl Read) -> Option<Vec<u8>> {
    let mut header = [0u8; 4];
    stream.read_exact(&mut header).ok()?;
    let mut body = vec![0u8; u32::from_be_bytes(header) as usize];
    stream.read_exact(&mut body).ok()?;
    Some(body)
}

/// True when the agent closed `stream` (a read sees end of file, or a broken pipe).
pub fn closed(stream: &mut impl Read) -> bool {
    let mut byte = [0u8; 1];
    match stream.read(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(err) => err.kind() == std::io::ErrorKind::BrokenPipe,
    }
}

/// The public key blob of a Key object, as the agent protocol names a key.
pub fn key_blob(key: &Value) -> Vec<u8> {
    use base64ct::Encoding;
    let text = key["public_key"].as_str().unwrap();
    base64ct::Base64::decode_vec(text.split_whitespace().nth(1).unwrap()).unwrap()
}

/// Appends `bytes` as an SSH string (a 4-byte length, then the bytes).
pub fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// A SIGN_REQUEST for `blob` over `data`, no flags.
pub fn sign_request(blob: &[u8], data: &[u8]) -> Vec<u8> {
    sign_request_with(blob, data, 0)
}

/// A SIGN_REQUEST for `blob` over `data` with `flags` (`RSA_SHA2_256`, ...).
pub fn sign_request_with(blob: &[u8], data: &[u8], flags: u32) -> Vec<u8> {
    let mut message = vec![13];
    put(&mut message, blob);
    put(&mut message, data);
    message.extend_from_slice(&flags.to_be_bytes());
    message
}

/// Reads an SSH string at `at`, moving `at` past it.
fn take<'a>(bytes: &'a [u8], at: &mut usize) -> &'a [u8] {
    let length = u32::from_be_bytes(bytes[*at..*at + 4].try_into().unwrap()) as usize;
    let field = &bytes[*at + 4..*at + 4 + length];
    *at += 4 + length;
    field
}

/// The key blobs of an IDENTITIES_ANSWER, in its order.
pub fn identity_blobs(answer: &[u8]) -> Vec<Vec<u8>> {
    assert_eq!(answer[0], 12, "an IDENTITIES_ANSWER: {answer:?}");
    let count = u32::from_be_bytes(answer[1..5].try_into().unwrap());
    let mut at = 5;
    (0..count)
        .map(|_| {
            let blob = take(answer, &mut at).to_vec();
            take(answer, &mut at);
            blob
        })
        .collect()
}

/// Asserts that `answer` is a SIGN_RESPONSE whose signature, of `algorithm`, verifies over
/// `data` with the public half of `key` (a Key object).
pub fn assert_signature_verifies(key: &Value, data: &[u8], answer: &[u8], algorithm: &str) {
    use rsa::signature::Verifier;
    assert_eq!(answer[0], 14, "a SIGN_RESPONSE: {answer:?}");
    let blob = take(answer, &mut 1);
    let signature = ssh_key::Signature::try_from(blob).unwrap();
    assert_eq!(signature.algorithm().as_str(), algorithm);
    let public = ssh_key::PublicKey::from_openssh(key["public_key"].as_str().unwrap()).unwrap();
    assert!(
        Verifier::verify(public.key_data(), data, &signature).is_ok(),
        "the {algorithm} signature verifies with {}",
        key["name"]
    );
}

/// `count` connections made by `connect`, each with a sign request for `blob` (over data
/// that is no login) waiting for the user once this returns; each thread gives its
/// connection's answer.
pub fn waiting_sign_requests<S: Read + Write + Send + 'static>(
    service: &Service,
    connect: impl Fn() -> S,
    blob: &[u8],
    count: usize,
) -> Vec<JoinHandle<Option<Vec<u8>>>> {
    let threads: Vec<_> = (0..count)
        .map(|_| {
            let mut stream = connect();
            let message = sign_request(blob, b"not a login");
            std::thread::spawn(move || exchange(&mut stream, &message))
        })
        .collect();
    let waiting = wait_until(DEADLINE, || {
        service.get("/api/agent").expect(200)["pending"] == count
    });
    assert!(waiting, "{count} requests wait");
    threads
}

/// One ed25519, one ECDSA P-256 and one 2048-bit RSA key generated in `service`: the agent
/// on a connection from `connect` lists exactly them, and signs with each (RSA with SHA-256
/// and SHA-512 as asked), every signature verifying with the key's public half.
pub fn assert_lists_and_signs_every_key_type<S: Read + Write>(
    service: &Service,
    connect: impl Fn() -> S,
) {
    let ed = service
        .post("/api/keys", &json!({"name": "ed", "type": "ed25519"}))
        .expect(201);
    let ec = service
        .post(
            "/api/keys",
            &json!({"name": "ec", "type": "ecdsa", "bits": 256}),
        )
        .expect(201);
    let rsa = service
        .post(
            "/api/keys",
            &json!({"name": "rsa", "type": "rsa", "bits": 2048}),
        )
        .expect(201);
    let mut stream = connect();
    let listed = identity_blobs(&exchange(&mut stream, &REQUEST_IDENTITIES).expect("a list"));
    let mut expected: Vec<Vec<u8>> = [&ed, &ec, &rsa].iter().map(|k| key_blob(k)).collect();
    let mut sorted = listed.clone();
    sorted.sort();
    expected.sort();
    assert_eq!(sorted, expected, "the three keys, each once");
    let data = b"session id and userauth request, or any data";
    for (key, flags, algorithm) in [
        (&ed, 0, "ssh-ed25519"),
        (&ec, 0, "ecdsa-sha2-nistp256"),
        (&rsa, RSA_SHA2_256, "rsa-sha2-256"),
        (&rsa, RSA_SHA2_512, "rsa-sha2-512"),
    ] {
        let request = sign_request_with(&key_blob(key), data, flags);
        let answer = exchange(&mut stream, &request).expect("a signature");
        assert_signature_verifies(key, data, &answer, algorithm);
    }
}

/// With a master password set and the vault locked, a connection from `connect` lists no
/// key and gets a failure for a sign request with a key it listed before; after unlocking
/// it signs again.
pub fn assert_locked_vault_lists_and_signs_nothing<S: Read + Write>(
    service: &Service,
    connect: impl Fn() -> S,
) {
    service
        .put("/api/vault/password", &json!({ "new_password": "pw" }))
        .expect(200);
    let key = service
        .post("/api/keys", &json!({"name": "ed", "type": "ed25519"}))
        .expect(201);
    let request = sign_request(&key_blob(&key), b"data");
    let mut stream = connect();
    assert_eq!(
        identity_blobs(&exchange(&mut stream, &REQUEST_IDENTITIES).unwrap()),
        [key_blob(&key)]
    );
    service.post("/api/vault/lock", &json!({})).expect(200);
    let mut fresh = connect();
    for stream in [&mut stream, &mut fresh] {
        assert_eq!(
            exchange(stream, &REQUEST_IDENTITIES),
            Some(NO_IDENTITIES.to_vec())
        );
        assert_eq!(
            exchange(stream, &request),
            Some(vec![5]),
            "SSH_AGENT_FAILURE"
        );
    }
    service
        .post("/api/vault/unlock", &json!({ "password": "pw" }))
        .expect(200);
    let answer = exchange(&mut stream, &request).expect("a signature");
    assert_signature_verifies(&key, b"data", &answer, "ssh-ed25519");
}

/// The service runs a short message timeout
/// (`HOST_MANAGER_TEST_AGENT_MESSAGE_TIMEOUT_MS`): a connection from `connect` whose message
/// stops arriving after its length and 3 bytes is closed by the agent, and another one is
/// still answered.
pub fn assert_a_stalled_message_closes_its_connection<S: Read + Write>(
    service: &Service,
    connect: impl Fn() -> S,
) {
    let mut bystander = connect();
    let mut stalled = connect();
    stalled.write_all(&10u32.to_be_bytes()).unwrap();
    stalled.write_all(&[13, 0, 0]).unwrap();
    assert!(
        closed(&mut stalled),
        "the agent closes it after the timeout"
    );
    assert!(service
        .stderr()
        .contains("closed a connection whose message stopped arriving"));
    assert_eq!(
        exchange(&mut bystander, &REQUEST_IDENTITIES),
        Some(NO_IDENTITIES.to_vec())
    );
}

/// After a new client took the place of the longest-idle connection at the cap: exactly one of
/// `open` was closed, the other 63 are still answered, and the service said why.
pub fn assert_one_idle_connection_made_room<S: Read + Write>(
    service: &crate::support::Service,
    open: &mut [S],
) {
    let answered = open
        .iter_mut()
        .map(|stream| exchange(stream, &REQUEST_IDENTITIES))
        .filter(|answer| answer.as_deref() == Some(&NO_IDENTITIES[..]))
        .count();
    assert_eq!(
        answered, 63,
        "one idle connection was closed, the rest go on"
    );
    assert!(service
        .stderr()
        .contains("closed the longest-idle one for a new client"));
}
