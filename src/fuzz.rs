//! A seeded random request generator driven through the real router and handlers on an
//! in-memory database: no request of any shape may panic or answer 500, and every answer to a
//! routed request is a status (and error code) the OpenAPI document lists for its operation.
//!
//! `cargo test fuzz` runs `FUZZ_ITERATIONS` requests (default 20,000, a few seconds);
//! `scripts/fuzz` runs a million. The seed is printed, so a failure can be replayed with
//! `FUZZ_SEED`. The seeded generator (`Rng`) and those two settings (`settings`) serve the
//! other fuzz and property tests too (the agent's parser, the known_hosts parser, the group
//! tree). The fuzzers of the identities' two parsers (TOTP secrets in `model::totp`, prompt
//! patterns in `model::prompt_pattern`) and of the forward rules' and environment's readers
//! (`model::forward`, `model::environment`) live here too, at the end.
//!
//! Invariants: compiled for tests only; deterministic for a seed (its own xorshift, no
//! clock, no OS randomness); leaves no file behind (in-memory database).

use std::panic::{self, AssertUnwindSafe};

use base64ct::Encoding as _;
use serde_json::{json, Map, Value};
use zeroize::Zeroizing;

use crate::api::openapi::documented;
use crate::http::{Method, Req};
use crate::router;
use crate::state::AppState;
use crate::vault::{DataKey, Vault};

/// xorshift64*: small, fast, and enough to spread inputs; no crate needed.
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value: the state is never zero).
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..bound` (0 when `bound` is 0).
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound.max(1) as u64) as usize
    }

    /// One of `items`, which must not be empty.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// One of `items`, `None` when there is none.
    pub fn pick_any<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        items.get(self.below(items.len()))
    }
}

/// How many inputs a fuzz test runs and from which seed: `FUZZ_ITERATIONS` (default
/// 20,000; `scripts/fuzz` runs a million) and `FUZZ_SEED` (else `default_seed`). Both are
/// printed with `what`, so a failure can be replayed.
pub fn settings(what: &str, default_seed: u64) -> (u64, u64) {
    let number = |name: &str| std::env::var(name).ok().and_then(|text| text.parse().ok());
    let iterations = number("FUZZ_ITERATIONS").unwrap_or(20_000);
    let seed = number("FUZZ_SEED").unwrap_or(default_seed);
    eprintln!("{what} fuzz: {iterations} inputs, FUZZ_SEED={seed}");
    (iterations, seed)
}

/// Every route, with ids filled in per request. The vault's password, unlock and lock
/// routes are left out: each call costs a 600,000-round key derivation or a growing delay,
/// and a locked vault would turn every later request into a 401. Their own tests cover them.
const PATHS: &[&str] = &[
    "/api/health",
    "/api/vault",
    "/api/hosts",
    "/api/hosts/{host}",
    "/api/hosts/{host}/favorite",
    "/api/hosts/{host}/move",
    "/api/hosts/{host}/connect",
    "/api/hosts/{host}/history",
    "/api/hosts/{host}/effective",
    "/api/hosts/{host}/forwards",
    "/api/hosts/{host}/forwards/{key}",
    "/api/history",
    "/api/changes",
    "/api/groups",
    "/api/groups/{group}",
    "/api/groups/{group}/move",
    "/api/groups/{group}/forwards",
    "/api/groups/{group}/forwards/{key}",
    "/api/keys",
    "/api/keys/{key}",
    "/api/keys/{key}/certificate",
    "/api/identities",
    "/api/identities/{key}",
    "/api/identities/{key}/usages",
    "/api/identities/{key}/totp",
    "/api/known-hosts",
    "/api/known-hosts/{key}",
    "/api/known-hosts/verify",
    "/api/known-hosts/accept",
    "/api/known-hosts/authorities",
    "/api/known-hosts/authorities/{key}",
    "/api/import/known-hosts",
    "/api/export/known-hosts",
    "/api/import/formats",
    "/api/import/csv",
    "/api/import/termius-csv",
    "/api/import/putty",
    "/api/import/mremoteng",
    "/api/import/{key}",
    "/api/snapshots",
    "/api/snapshots/{key}",
    "/api/snapshots/{key}/restore",
    // Not PUT /api/sync: a generated body could name a real directory (`/`) as the folder.
    "/api/sync/now",
    "/api/sync/conflicts",
    "/api/export/bundle",
    "/api/import/bundle",
    "/api/export/csv",
    "/api/export/termius-csv",
    "/api/export/json",
    "/api/search",
    "/api/searches",
    "/api/searches/{key}",
    "/api/audit",
    "/api/agent",
    "/api/agent/requests",
    "/api/agent/requests/{key}",
    "/api/openapi.json",
    "/api/nope",
    "/",
];

const QUERY_KEYS: &[&str] = &[
    "q",
    "group",
    "tag",
    "search",
    "favorite",
    "sort",
    "order",
    "page",
    "per_page",
    "x",
    "hashed",
    "hostname",
    "port",
    "host_id",
    "limit",
    "before",
    "since",
    "wait",
    "agent",
    "principals",
    "secrets",
    "certificate",
    "reassign_to",
];

/// `If-Match` values: none, well-formed and malformed (docs/api.md, "Revisions and If-Match").
const IF_MATCHES: &[Option<&str>] = &[
    None,
    None,
    None,
    Some("\"1\""),
    Some("\"2\", \"3\""),
    Some("*"),
    Some("W/\"1\""),
    Some("1"),
    Some(""),
    Some("\"\u{e9}\""),
];

/// Values that sit on or near the edges of the validation rules.
fn edge_values(rng: &mut Rng, ids: &[String]) -> Value {
    let strings = [
        String::new(),
        " ".into(),
        "a".into(),
        "x".repeat(100),
        "x".repeat(101),
        "é".repeat(100),
        "#12abEF".into(),
        "#12abE".into(),
        "::1".into(),
        "[::1]".into(),
        "host:22".into(),
        "user@host".into(),
        "ssh-ed25519-cert-v01@openssh.com AAAAIHNzaC1lZDI1NTE5LWNlcnQtdjAxQG9wZW5zc2guY29t".into(),
        "a-".repeat(130),
        "%_\\\"'\u{0}".into(),
        "password".into(),
        "key".into(),
        "agent".into(),
        "null".into(),
        "tag:prod -web is:favorite".into(),
        "port:22,2200-2299 used:<7d".into(),
        "group:\"a b\"/c has:key,chain".into(),
    ];
    match rng.below(14) {
        0 => Value::Null,
        1 => Value::Bool(rng.below(2) == 0),
        2 => json!(*rng.pick(&[0i64, 1, -1, 22, 65535, 65536, i64::MAX, i64::MIN])),
        3 => json!(*rng.pick(&[22.5f64, 1e300, -0.0])),
        4 | 5 => Value::String(rng.pick(&strings).clone()),
        6 => Value::String(rng.pick(ids).clone()),
        7 => Value::Array(
            (0..rng.below(70))
                .map(|i| Value::String(format!("t{}", i % 5)))
                .collect(),
        ),
        8 => Value::Array(vec![json!(1), Value::Null]),
        9 => {
            json!({"type": rng.pick(&["password", "key", "agent", "x"]), "key_id": rng.pick(ids), "password": "p"})
        }
        10 if rng.below(2) == 0 => Value::Object(Map::new()),
        // An agent policy, an approval decision or neither, with good and bad values.
        10 => json!({
            "enabled": rng.pick(&[json!(true), json!(false), json!("yes"), Value::Null]),
            "confirm": *rng.pick(&["never", "once_per_host", "always", "Always", ""]),
            "forwarded": *rng.pick(&["deny", "confirm", "allow", "ask"]),
            "decision": *rng.pick(&["allow", "deny", "maybe"]),
        }),
        // An identity's auth methods (docs/identities.md), good and bad.
        12 => json!([
            {"type": *rng.pick(&["key", "password", "keyboard_interactive", "agent", "x"]),
             "key_id": rng.pick(ids), "password": *rng.pick(&["p", ""]),
             "answers": [{"prompt": *rng.pick(&["^Password:", "(?<=x)y", "", "(?i)code"]),
                          "answer": {"type": *rng.pick(&["password", "totp", "literal", "x"]),
                                     "literal": "l"}}]},
            {"type": *rng.pick(&["agent", "password"])}
        ]),
        // A TOTP object: base32, URIs, and settings on and past their bounds.
        13 => json!({
            "secret": *rng.pick(&["GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ",
                "otpauth://totp/x?secret=GEZDGNBV&digits=7", "otpauth://hotp/x?secret=GE", "!!", ""]),
            "digits": *rng.pick(&[6, 8, 9]),
            "period": *rng.pick(&[30, 0, 3601]),
            "algorithm": *rng.pick(&["SHA1", "SHA512", "md5"]),
        }),
        _ => Value::String(format!("{}", rng.next())),
    }
}

/// A `files` array for the importers: a few lines of each format's structure, shuffled.
fn import_files(rng: &mut Rng) -> Value {
    let pieces = [
        "name,hostname,port,username,auth,password,group_path,tags,notes,proxy_jump\r\n",
        "Groups,Label,Tags,Hostname/IP,Protocol,Port,Username,Password\n",
        "a,b.example.com,22,u,password,pw,G/H,t;u,n,x@y:22\n",
        "Windows Registry Editor Version 5.00\r\n",
        "[HKEY_CURRENT_USER\\Software\\SimonTatham\\PuTTY\\Sessions\\s%20one]\r\n",
        "\"HostName\"=\"u@h\"\r\n\"PortNumber\"=dword:00000016\r\n",
        "[Bookmarks]\r\nSubRep=A\\B\r\nImgNum=41\r\n",
        "s=#109#0%h%22%u%%-1%-1%%%%%0%0%0%%%-1%0%0%0%%1080%%0%0%1#MobaFont#0# #-1\r\n",
        "[Sessions\\f/s]\nHostName=h\nPassword=A35C\n",
        "<?xml version=\"1.0\"?><VanDyke version=\"3.0\"><key name=\"Sessions\">",
        "<Connections Name=\"C\" KdfIterations=\"1000\"><Node Type=\"Connection\" Hostname=\"h\" Protocol=\"SSH2\"/>",
        "[remmina]\nprotocol=SSH\nserver=h:2222\npassword=.\n",
        "</key></VanDyke>",
    ];
    let mut files = Vec::new();
    for _ in 0..rng.below(3) {
        let mut text = String::new();
        for _ in 0..rng.below(12) {
            text.push_str(rng.pick::<&str>(&pieces));
        }
        let file = match rng.below(3) {
            0 => json!({"name": "f.remmina", "content": text}),
            1 => json!({"name": "remmina.pref", "content": "[remmina_pref]\nsecret=AAAA\n"}),
            _ => {
                json!({"name": "f", "content_base64": base64ct::Base64::encode_string(text.as_bytes())})
            }
        };
        files.push(file);
    }
    Value::Array(files)
}

fn body(rng: &mut Rng, ids: &[String]) -> Vec<u8> {
    let fields = [
        "name",
        "hostname",
        "port",
        "username",
        "auth",
        "group_id",
        "tags",
        "is_favorite",
        "color",
        "notes",
        "order",
        "parent_id",
        "icon",
        "password",
        "private_key",
        "passphrase",
        "comment",
        "public_key",
        "pattern",
        "replace",
        "text",
        "dry_run",
        "agent",
        "decision",
        "certificate",
        "totp",
        "bind_address",
        "bind_port",
        "bind_socket",
        "target_host",
        "target_port",
        "target_socket",
        "enabled",
        "autostart",
        "description",
        "position",
        "remote_command",
        "request_tty",
        "set_env",
        "send_env",
        "files",
        "secrets",
        "encoding",
        "parent_group_id",
    ];
    match rng.below(10) {
        0 => Vec::new(),
        1 => b"{not json".to_vec(),
        2 => json!([1, 2]).to_string().into_bytes(),
        3 => {
            let mut bytes = json!({"name": "n"}).to_string().into_bytes();
            let index = rng.below(bytes.len());
            bytes[index] = (rng.next() & 0xff) as u8;
            bytes
        }
        _ => {
            let mut object = Map::new();
            for _ in 0..rng.below(8) {
                object.insert((*rng.pick(&fields)).to_owned(), edge_values(rng, ids));
            }
            // Key generation is slow by nature (RSA); the fuzzer exercises imports only. A
            // forward rule's type is one that generates no key.
            if rng.below(2) == 0 {
                let kind = *rng.pick(&["local", "remote", "dynamic", "x"]);
                object.insert("type".into(), Value::String(kind.into()));
            }
            // An import's files: text in every reader's shape, or bytes.
            if rng.below(4) == 0 {
                object.insert("files".into(), import_files(rng));
            }
            Value::Object(object).to_string().into_bytes()
        }
    }
}

fn target(rng: &mut Rng, ids: &[String]) -> String {
    let (host, group, key) = (
        rng.pick(ids).clone(),
        rng.pick(ids).clone(),
        rng.pick(ids).clone(),
    );
    let path = rng
        .pick(PATHS)
        .replace("{host}", &host)
        .replace("{group}", &group)
        .replace("{key}", &key);
    let mut query = String::new();
    for _ in 0..rng.below(4) {
        let value = match edge_values(rng, ids) {
            Value::String(text) => text.replace(['&', '#', '%'], ""),
            other => other.to_string(),
        };
        query.push_str(&format!(
            "{}={}&",
            rng.pick(QUERY_KEYS),
            value.replace(' ', "+")
        ));
    }
    match query.is_empty() {
        true => path,
        false => format!("{path}?{query}"),
    }
}

fn state() -> AppState {
    let mut state = AppState::for_tests(Vault::NoPassword(DataKey::generate()));
    // A change feed request with nothing new answers at once instead of waiting seconds.
    state.config.feed_overrides.max_wait = Some(std::time::Duration::ZERO);
    state
}

/// Whether `status` (with the error `code`, empty for a success) is documented for the
/// operation `target` routes to; an unrouted target (404, 405) has no operation to ask.
fn is_documented(document: &Value, method: Method, target: &str, status: u16, code: &str) -> bool {
    let path = target.split('?').next().unwrap_or_default();
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let Some(template) = documented::template(method, &segments) else {
        return true;
    };
    match documented::response(document, method, template, status) {
        None => false,
        Some(_) if code.is_empty() => true,
        Some(response) => documented::allows_code(response, code),
    }
}

#[test]
fn no_request_panics_or_answers_500_or_an_undocumented_status() {
    let (iterations, seed) = settings("request", 0x5EED_CAFE);
    let state = state();
    let document = documented::document();
    let mut rng = Rng::new(seed);
    // Ids seen in 2xx bodies, so later requests hit real rows as well as unknown ones.
    let mut ids = vec![
        "00000000-0000-4000-8000-000000000000".to_string(),
        "not-a-uuid".into(),
        String::new(),
    ];
    let methods = [
        Method::Get,
        Method::Post,
        Method::Put,
        Method::Patch,
        Method::Delete,
        Method::Head,
        Method::Options,
    ];
    for iteration in 0..iterations {
        let method = *rng.pick(&methods);
        let target = target(&mut rng, &ids);
        let body = body(&mut rng, &ids);
        let if_match = rng.pick(IF_MATCHES).map(str::to_owned);
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
            match Req::new(method, &target, Zeroizing::new(body.clone())) {
                Ok(req) => router::route(&state, &req.with_if_match(if_match.clone()))
                    .map(|reply| (reply.status, reply.body.to_vec())),
                Err(err) => Err(router::Failure::from(err)),
            }
        }));
        let described = || {
            format!(
                "#{iteration} {} {target} {}",
                method.as_str(),
                String::from_utf8_lossy(&body)
            )
        };
        match &outcome {
            Err(_) => panic!("panic on {}", described()),
            Ok(Err(err)) => {
                assert_ne!(err.status(), 500, "500 ({err}) on {}", described());
                let documented =
                    is_documented(&document, method, &target, err.status(), err.code());
                assert!(documented, "{err} is not documented for {}", described());
            }
            Ok(Ok((status, reply))) => {
                let documented = is_documented(&document, method, &target, *status, "");
                assert!(documented, "{status} is not documented for {}", described());
                if let Ok(value) = serde_json::from_slice::<Value>(reply) {
                    if let Some(id) = value.get("id").and_then(Value::as_str) {
                        if ids.len() < 64 {
                            ids.push(id.to_owned());
                        }
                    }
                }
            }
        }
    }
}

/// Identities' keyboard-interactive rules (docs/identities-rules.md): the prompt pattern
/// parser never panics on seeded random texts built from the regex syntax characters and a
/// few letters, and a pattern it accepts never panics matching random prompts.
#[test]
fn prompt_pattern_parser_and_matcher_never_panic_on_seeded_random_text() {
    use crate::model::prompt_pattern::PromptPattern;
    let (iterations, seed) = settings("prompt pattern", 0x5EED_CAFE);
    let pieces: [&str; 16] = [
        "(?i)", "(?", "(?:", "\\", "{", "}", "{2}", "{1,3}", ",", "[^", "-", "a", "B", "é", "😀",
        "\n",
    ];
    let specials: Vec<char> = "\\.*+?()[]{}|^$/-:=!<>,&~PpkbdDwWsS0123456789"
        .chars()
        .collect();
    let letters = [
        'a', 'b', 'A', 'é', 'É', 'ς', '1', ' ', '\n', '\u{212a}', '😀',
    ];
    let mut rng = Rng::new(seed);
    for iteration in 0..iterations {
        let mut text = String::new();
        for _ in 0..rng.below(24) {
            match rng.below(3) {
                0 => text.push_str(rng.pick::<&str>(&pieces)),
                _ => text.push(*rng.pick(&specials)),
            }
        }
        let prompts: Vec<String> = (0..4)
            .map(|_| (0..rng.below(40)).map(|_| *rng.pick(&letters)).collect())
            .collect();
        let outcome = panic::catch_unwind(|| {
            if let Ok(pattern) = PromptPattern::parse(&text) {
                for prompt in &prompts {
                    pattern.is_match(prompt);
                }
            }
        });
        assert!(
            outcome.is_ok(),
            "#{iteration} panicked on {text:?} / {prompts:?}"
        );
    }
}

/// Identities' TOTP secrets (docs/identities-rules.md): the secret parser never panics on
/// seeded random base32 and `otpauth` texts, its errors never hold the secret, and an
/// accepted secret gives a code of the right digits at any time without panicking.
#[test]
fn totp_secret_parser_never_panics_on_seeded_random_text() {
    use crate::model::totp::{self, TotpSettings};
    let (iterations, seed) = settings("totp secret", 0x5EED_CAFE);
    let mut rng = Rng::new(seed);
    for iteration in 0..iterations {
        let text = match rng.below(3) {
            0 => random_base32(&mut rng),
            1 => random_otpauth(&mut rng),
            _ => {
                let mut text = random_otpauth(&mut rng);
                for _ in 0..1 + rng.below(3) {
                    let index = rng.below(text.len() + 1);
                    if text.is_char_boundary(index) {
                        let noise = char::from_u32(rng.below(0x250) as u32).unwrap_or('x');
                        text.insert(index, noise);
                    }
                }
                text
            }
        };
        let time = rng.next() >> rng.below(64);
        let outcome = panic::catch_unwind(|| match totp::parse_secret(&text) {
            Err(invalid) => assert!(!invalid.to_string().contains("JBSWY3DP"), "{invalid}"),
            Ok((secret, uri)) => {
                let uri = uri.unwrap_or_default();
                let settings = TotpSettings::new(
                    uri.digits.map_or(6, u64::from),
                    uri.period.map_or(30, u64::from),
                    uri.algorithm.unwrap_or(totp::Algorithm::Sha1),
                )
                .unwrap_or_default();
                let (code, valid_for_s) = totp::code(secret.expose_bytes(), &settings, time);
                assert_eq!(code.len(), usize::from(settings.digits()));
                assert!(code.bytes().all(|byte| byte.is_ascii_digit()));
                assert!((1..=settings.period()).contains(&valid_for_s));
            }
        });
        assert!(outcome.is_ok(), "#{iteration} failed on {text:?} at {time}");
    }
}

/// Base32-like text: the alphabet in both cases, separators, padding and a few strangers.
fn random_base32(rng: &mut Rng) -> String {
    let alphabet: Vec<char> = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567abcxyz ==-18é"
        .chars()
        .collect();
    match rng.below(4) {
        0 => "JBSWY3DPEHPK3PXP".repeat(1 + rng.below(20)),
        _ => (0..rng.below(48)).map(|_| *rng.pick(&alphabet)).collect(),
    }
}

/// An `otpauth` URI from good and bad kinds, labels, parameters and values (mostly good, so
/// many pass and reach `code`).
fn random_otpauth(rng: &mut Rng) -> String {
    let kinds = ["totp", "totp", "TOTP", "hotp", "motp"];
    let labels = ["/", "/ACME:me%40x", "/a+b", "", "/%FF", "/%"];
    let mut text = format!("otpauth://{}{}?", rng.pick(&kinds), rng.pick(&labels));
    let mut keys = vec![
        "secret",
        "digits",
        "period",
        "algorithm",
        "issuer",
        "counter",
    ];
    if rng.below(8) == 0 {
        keys.push(*rng.pick(&["secret", "SECRET", "digits", ""]));
    }
    for key in keys {
        if rng.below(4) == 0 {
            continue;
        }
        let good = rng.below(5) != 0;
        let value = match key.to_ascii_lowercase().as_str() {
            "secret" if good => rng
                .pick(&["JBSWY3DPEHPK3PXP", "jbsw+y3dp-%4A%42", "MY======"])
                .to_string(),
            "secret" => random_base32(rng),
            "digits" if good => rng.pick(&["6", "7", "8"]).to_string(),
            "period" if good => rng.pick(&["1", "30", "3600"]).to_string(),
            "digits" | "period" => rng
                .pick(&["0", "5", "9", "3601", "", "x", "99999999999"])
                .to_string(),
            "algorithm" if good => rng.pick(&["sha1", "SHA256", "Sha512"]).to_string(),
            _ => rng
                .pick(&["", "%", "%G0", "ACME+Co%20Ltd", "MD5", "\u{e9}"])
                .to_string(),
        };
        text.push_str(&format!("{key}={value}&"));
    }
    text
}

/// Forward rules (docs/forwards.md): the directive reader never panics on seeded random
/// lines built from forward grammar's characters, and a directive it accepts is a rule the
/// API accepts, which `directive` writes and the reader reads back to the same rule.
#[test]
fn forward_directive_reader_never_panics_and_rereads_what_it_accepts() {
    use crate::model::forward::ForwardSpec;
    use crate::model::ssh_words::{split_args, split_keyword};
    let (iterations, seed) = settings("forward directive", 0x5EED_0F0D);
    let keywords = [
        "LocalForward",
        "RemoteForward",
        "DynamicForward",
        "localforward",
        "REMOTEFORWARD",
        "DynamicForward=",
        "LocalForwardx",
        "",
    ];
    let pieces = [
        "8080",
        "0",
        "1",
        "65535",
        "65536",
        "080",
        "localhost",
        "*",
        "0.0.0.0",
        "127.0.0.1",
        "[::1]",
        "[::]",
        "::1",
        "db.internal",
        "/tmp/a.sock",
        "%%",
        "%h",
        "${HOME}",
        "\\",
    ];
    let alphabet: Vec<char> = "0123456789:[]*/abcxyz.- \t\"'\\#%=$é".chars().collect();
    let mut rng = Rng::new(seed);
    let (mut accepted, mut iteration) = (0_u64, 0_u64);
    while iteration < iterations {
        iteration += 1;
        let mut line = format!("{} ", rng.pick(&keywords));
        let shaped = rng.below(2) == 0;
        if shaped {
            // Shaped like a forward: [address:]port or a path, then maybe a target.
            let ends = [
                "8080",
                "*:1080",
                "[::1]:1",
                "localhost:0",
                "0.0.0.0:22",
                "/tmp/a.sock",
                "db:80",
                "[::1]:22",
                "h:65535",
                "\"/tmp/a b%%\\\\.sock\"",
            ];
            for _ in 0..1 + rng.below(2) {
                match rng.below(3) {
                    0 => line.push_str(&format!(
                        "{}:{}",
                        rng.pick::<&str>(&pieces),
                        rng.pick::<&str>(&pieces)
                    )),
                    _ => line.push_str(rng.pick::<&str>(&ends)),
                }
                line.push(' ');
            }
        }
        for _ in 0..rng.below(if shaped { 2 } else { 8 }) {
            match rng.below(3) {
                0 => line.push_str(rng.pick::<&str>(&pieces)),
                1 => line.push(*rng.pick(&alphabet)),
                _ => line.push(*rng.pick(&[' ', ':', ' '])),
            }
        }
        let outcome = panic::catch_unwind(|| {
            let (keyword, rest) = split_keyword(&line);
            let Ok(args) = split_args(rest) else {
                return false;
            };
            let Ok(spec) = ForwardSpec::from_directive(keyword, &args) else {
                return false;
            };
            let json = serde_json::to_value(&spec).unwrap_or_default();
            let body = json.as_object().cloned().unwrap_or_default();
            assert_eq!(
                ForwardSpec::from_json(&body).as_ref(),
                Ok(&spec),
                "from_json"
            );
            let written = spec.directive();
            let (keyword, rest) = split_keyword(&written);
            let args = split_args(rest).unwrap_or_default();
            assert_eq!(
                ForwardSpec::from_directive(keyword, &args),
                Ok(spec),
                "{written}"
            );
            true
        });
        match outcome {
            Ok(true) => accepted += 1,
            Ok(false) => {}
            Err(_) => panic!("#{iteration} failed on {line:?}"),
        }
    }
    eprintln!("forward directive fuzz: {accepted} of {iterations} lines accepted");
}

/// Forward rules (docs/forwards.md, "Rules"): `ForwardSpec::from_json` and `patched` never
/// panic on seeded random JSON objects of the rule's fields and edge values, and a body
/// they accept is a rule whose directive reads back to itself.
#[test]
fn forward_json_reader_never_panics_and_rereads_what_it_accepts() {
    use crate::model::forward::{ForwardSettings, ForwardSpec};
    use crate::model::ssh_words::{split_args, split_keyword};
    let (iterations, seed) = settings("forward json", 0x5EED_0F0E);
    let fields = [
        "type",
        "bind_address",
        "bind_port",
        "bind_socket",
        "target_host",
        "target_port",
        "target_socket",
        "enabled",
        "autostart",
        "description",
    ];
    let values = [
        json!("local"),
        json!("remote"),
        json!("dynamic"),
        json!("Local"),
        json!(null),
        json!(0),
        json!(1),
        json!(8080),
        json!(65535),
        json!(65536),
        json!(-1),
        json!(1.5),
        json!("localhost"),
        json!("*"),
        json!("0.0.0.0"),
        json!("256.1.1.1"),
        json!("[::1]"),
        json!("[::1"),
        json!("::1"),
        json!(""),
        json!("db.internal"),
        json!("/tmp/a.sock"),
        json!("/tmp/a:b"),
        json!("/tmp/%h \\ \"#"),
        json!("rel/path"),
        json!(true),
        json!(false),
        json!([]),
        json!({}),
        json!("a\nb"),
        json!("x".repeat(201)),
    ];
    let mut rng = Rng::new(seed);
    let mut accepted = 0_u64;
    for iteration in 0..iterations {
        let mut body = match rng.below(2) {
            0 => shaped_forward_body(&mut rng),
            _ => Map::new(),
        };
        for _ in 0..rng.below(if body.is_empty() { 10 } else { 3 }) {
            let field = *rng.pick(&fields);
            let value = match rng.below(3) {
                0 => rng.pick(&values).clone(),
                _ => good_forward_value(&mut rng, field),
            };
            body.insert(field.to_string(), value);
        }
        let mut patch = Map::new();
        for _ in 0..rng.below(4) {
            patch.insert(rng.pick(&fields).to_string(), rng.pick(&values).clone());
        }
        let outcome = panic::catch_unwind(|| {
            let _ = ForwardSettings::default().patched(&body);
            let spec = ForwardSpec::from_json(&body).ok()?;
            let written = spec.directive();
            let (keyword, rest) = split_keyword(&written);
            let args = split_args(rest).unwrap_or_default();
            assert_eq!(
                ForwardSpec::from_directive(keyword, &args).as_ref(),
                Ok(&spec),
                "{written}"
            );
            if let Ok(patched) = spec.patched(&patch) {
                let json = serde_json::to_value(&patched).unwrap_or_default();
                let again = ForwardSpec::from_json(json.as_object()?);
                assert_eq!(again, Ok(patched), "patched");
            }
            Some(())
        });
        match outcome {
            Ok(Some(())) => accepted += 1,
            Ok(None) => {}
            Err(_) => panic!("#{iteration} failed on {body:?} then {patch:?}"),
        }
    }
    eprintln!("forward json fuzz: {accepted} of {iterations} bodies accepted");
}

/// A body whose fields fit together for its type (each value may still break a rule).
fn shaped_forward_body(rng: &mut Rng) -> Map<String, Value> {
    let kind = *rng.pick(&["local", "remote", "dynamic"]);
    let mut body = Map::new();
    body.insert("type".into(), json!(kind));
    let mut put = |rng: &mut Rng, field: &str| {
        body.insert(field.into(), good_forward_value(rng, field));
    };
    if kind != "dynamic" && rng.below(3) == 0 {
        put(rng, "bind_socket");
    } else {
        put(rng, "bind_port");
        if rng.below(2) == 0 {
            put(rng, "bind_address");
        }
    }
    match (kind, rng.below(3)) {
        ("dynamic", _) | ("remote", 0) => {}
        (_, 1) => put(rng, "target_socket"),
        _ => {
            put(rng, "target_host");
            put(rng, "target_port");
        }
    }
    body
}

/// A value that often passes for `field` of a forward rule.
fn good_forward_value(rng: &mut Rng, field: &str) -> Value {
    match field {
        "type" => json!(rng.pick(&["local", "remote", "dynamic"])),
        "bind_address" => {
            json!(rng.pick(&["localhost", "*", "127.0.0.1", "0.0.0.0", "[::1]", "[::]"]))
        }
        "bind_port" | "target_port" => json!(rng.pick(&[1, 22, 1080, 8080, 65535])),
        "bind_socket" | "target_socket" => {
            json!(rng.pick(&["/tmp/a.sock", "/run/my app/%h.sock", "/tmp/q\\\"#'.sock"]))
        }
        "target_host" => json!(rng.pick(&["db.internal", "::1", "[2001:db8::1]", "10.0.0.1"])),
        "enabled" | "autostart" => json!(rng.below(2) == 0),
        _ => json!(rng.pick(&["", " staging db ", "é"])),
    }
}

/// Startup command and environment (docs/forwards.md): the config readers never panic on
/// seeded random lines, and what they accept the line writers write back to a line they
/// read to the same value (as does the API's `remote_command` rule).
#[test]
fn environment_readers_never_panic_and_reread_what_they_accept() {
    use crate::model::environment as env;
    use crate::model::ssh_words::{split_args, split_keyword};
    let (iterations, seed) = settings("environment", 0x5EED_00E1);
    let alphabet: Vec<char> = "aZ_09 \t\"'\\#%=${}*?-é\n".chars().collect();
    let pieces = ["%%", "%h", "none", "LANG=C", "=", "\\\"", "LC_*"];
    let mut rng = Rng::new(seed);
    let mut accepted = [0_u64; 3];
    for iteration in 0..iterations {
        let mut rest = String::new();
        for _ in 0..rng.below(16) {
            match rng.below(4) {
                0 => rest.push_str(rng.pick::<&str>(&pieces)),
                _ => rest.push(*rng.pick(&alphabet)),
            }
        }
        let outcome = panic::catch_unwind(|| {
            let mut taken = [false; 3];
            if let Ok(command) = env::remote_command_from_config(&rest) {
                taken[0] = true;
                let line = env::remote_command_line(&command);
                let reread = env::remote_command_from_config(split_keyword(&line).1);
                assert_eq!(reread.as_ref(), Ok(&command), "{line}");
                let api = env::remote_command(&json!(command));
                assert_eq!(api.ok().flatten().as_ref(), Some(&command));
            }
            if let Ok(Some(command)) = env::remote_command(&json!(rest)) {
                let line = env::remote_command_line(&command);
                let reread = env::remote_command_from_config(split_keyword(&line).1);
                assert_eq!(reread, Ok(command), "{line}");
            }
            let _ = env::request_tty_from_config(&rest);
            let Ok(args) = split_args(&rest) else {
                return taken;
            };
            if let Ok(pairs) = env::set_env_from_config(&args) {
                taken[1] = true;
                let borrowed: Vec<(&str, &str)> = pairs
                    .iter()
                    .map(|(n, v)| (n.as_str(), v.as_str()))
                    .collect();
                let line = env::set_env_line_of(&borrowed);
                let args = split_args(split_keyword(&line).1).unwrap_or_default();
                assert_eq!(env::set_env_from_config(&args), Ok(pairs), "{line}");
            }
            if let Ok(patterns) = env::send_env_from_config(&args) {
                taken[2] = true;
                let line = env::send_env_line(&patterns);
                let args = split_args(split_keyword(&line).1).unwrap_or_default();
                assert_eq!(env::send_env_from_config(&args), Ok(patterns), "{line}");
            }
            taken
        });
        match outcome {
            Ok(taken) => {
                for (count, taken) in accepted.iter_mut().zip(taken) {
                    *count += u64::from(taken);
                }
            }
            Err(_) => panic!("#{iteration} failed on {rest:?}"),
        }
    }
    let [commands, set, send] = accepted;
    eprintln!(
        "environment fuzz: of {iterations} lines, {commands} read as RemoteCommand, {set} as \
         SetEnv, {send} as SendEnv"
    );
}
