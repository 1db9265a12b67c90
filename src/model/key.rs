//! SSH keys as stored, validated and shown: the comment rule, the generation spec (`type`
//! and `bits`), the update body, and the view that never carries a secret. Names follow
//! `model::name`.
//!
//! Invariants: pure values and rules, no I/O and no key material (private keys and
//! passphrases stay in `vault::Secret` in the api layer); an `Invalid` names the field and
//! the rule and never echoes the value, which could be a secret pasted into the wrong field.

use serde::Serialize;
use serde_json::Value;

use crate::model::agent::{AgentPatch, AgentPolicy};
use crate::model::certificate::{self, Certificate, CertificateView};
use crate::model::name::Name;
use crate::model::validate::Invalid;

/// A comment ends up on an `authorized_keys` line: one line, short enough to read.
pub const COMMENT_MAX_CHARS: usize = 255;

/// docs/api.md, Keys: RSA sizes, the default first.
pub const RSA_BITS: [usize; 3] = [3072, 2048, 4096];
/// docs/api.md, Keys: ECDSA sizes (curves), the default first.
pub const ECDSA_BITS: [usize; 3] = [256, 384, 521];

/// One stored key row, without its sealed secrets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key {
    pub id: String,
    pub name: String,
    /// The OpenSSH algorithm name: `ssh-ed25519`, `ssh-rsa`, `ecdsa-sha2-nistp256`, ...
    pub key_type: String,
    /// `<algorithm> <base64>` without a comment; the view appends the current comment.
    pub public_key: String,
    pub fingerprint: String,
    pub comment: String,
    pub has_passphrase: bool,
    pub created_at: String,
    pub updated_at: String,
    /// The SSH agent's policy for this key (docs/agent.md "SSH agent").
    pub agent: AgentPolicy,
    /// Bumped by every edit (docs/api.md, "Revisions and If-Match").
    pub revision: i64,
}

/// The Key object of every response. Has no field that could hold a secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KeyView {
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub key_type: String,
    /// The one-line OpenSSH form: `<algorithm> <base64>`, then ` <comment>` when the
    /// comment is not empty (what goes into `authorized_keys`).
    pub public_key: String,
    pub fingerprint: String,
    pub has_passphrase: bool,
    pub comment: String,
    pub created_at: String,
    pub updated_at: String,
    pub agent: AgentPolicy,
    pub revision: i64,
    /// The certificate `connect` and the ssh_config export use (`certificate::in_use`),
    /// `null` when none is valid now.
    pub certificate: Option<CertificateView>,
    /// Every attached certificate, oldest attachment first.
    pub certificates: Vec<CertificateView>,
}

/// An ECDSA curve, named by its size in bits as the API's `bits` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Curve {
    P256,
    P384,
    P521,
}

/// What to generate: a validated `type` and `bits`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeySpec {
    Ed25519,
    Ecdsa(Curve),
    /// 2048, 3072 or 4096 bits.
    Rsa(usize),
}

/// A validated `PUT /api/keys/:id`: `None` leaves a field as it is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyPatch {
    pub name: Option<Name>,
    pub comment: Option<String>,
    pub agent: Option<AgentPatch>,
}

impl Key {
    /// The Key object, with the key's `certificates` as they stand at `now` (seconds since
    /// 1970).
    pub fn view(&self, certificates: &[Certificate], now: u64) -> KeyView {
        KeyView {
            id: self.id.clone(),
            name: self.name.clone(),
            key_type: self.key_type.clone(),
            public_key: public_line(&self.public_key, &self.comment),
            fingerprint: self.fingerprint.clone(),
            has_passphrase: self.has_passphrase,
            comment: self.comment.clone(),
            created_at: self.created_at.clone(),
            updated_at: self.updated_at.clone(),
            agent: self.agent,
            revision: self.revision,
            certificate: certificate::in_use(certificates, now).map(|cert| cert.view(now)),
            certificates: certificates.iter().map(|cert| cert.view(now)).collect(),
        }
    }
}

impl KeySpec {
    /// Reads `type` (`ed25519`, `ecdsa` or `rsa`) and `bits` (docs/api.md, Keys: rsa 2048,
    /// 3072 default, 4096; ecdsa 256 default, 384, 521; ed25519 none). `bits: null` is the
    /// same as no `bits`.
    pub fn parse(key_type: &Value, bits: Option<&Value>) -> Result<KeySpec, Invalid> {
        let bits = match bits {
            None | Some(Value::Null) => None,
            Some(value) => Some(value),
        };
        match key_type.as_str() {
            Some("ed25519") => match bits {
                None => Ok(KeySpec::Ed25519),
                Some(_) => Err(Invalid::new("bits", "must be absent for type ed25519")),
            },
            Some("ecdsa") => match bits_in(bits, &ECDSA_BITS, "ecdsa")? {
                384 => Ok(KeySpec::Ecdsa(Curve::P384)),
                521 => Ok(KeySpec::Ecdsa(Curve::P521)),
                _ => Ok(KeySpec::Ecdsa(Curve::P256)),
            },
            Some("rsa") => Ok(KeySpec::Rsa(bits_in(bits, &RSA_BITS, "rsa")?)),
            _ => Err(Invalid::new(
                "type",
                "must be one of \"ed25519\", \"ecdsa\", \"rsa\"",
            )),
        }
    }

    /// RSA generation takes seconds (up to ~20 s for 4096 bits with ssh-key 0.6); the
    /// others take under a millisecond.
    pub fn is_slow(self) -> bool {
        matches!(self, KeySpec::Rsa(_))
    }
}

impl KeyPatch {
    /// Reads a `PUT` body: `name`, `comment` and `agent` may change. The create-only fields
    /// `private_key`, `passphrase` and `bits` are refused rather than silently ignored, so
    /// a client never believes it changed a passphrase; the read-only fields of the Key
    /// object (`type`, `fingerprint`, ...) are ignored, so a client may send back what it
    /// got.
    pub fn parse(body: &serde_json::Map<String, Value>) -> Result<KeyPatch, Invalid> {
        for field in ["private_key", "passphrase", "bits"] {
            if body.get(field).is_some_and(|value| !value.is_null()) {
                return Err(Invalid::new(
                    field,
                    "cannot be changed; import or generate a new key instead",
                ));
            }
        }
        let name = match body.get("name") {
            None => None,
            Some(value) => Some(Name::parse(value)?),
        };
        let comment = match body.get("comment") {
            None => None,
            Some(value) => Some(comment(value)?),
        };
        let agent = match body.get("agent") {
            None | Some(Value::Null) => None,
            Some(value) => Some(AgentPatch::parse(value)?),
        };
        Ok(KeyPatch {
            name,
            comment,
            agent,
        })
    }
}

/// A `comment` from a request: a string of at most 255 characters once trimmed, with no
/// control characters (it must stay on one `authorized_keys` line); `null` is `""`.
pub fn comment(value: &Value) -> Result<String, Invalid> {
    let rule = || {
        format!(
            "must be a string of at most {COMMENT_MAX_CHARS} characters without control \
             characters such as line breaks"
        )
    };
    let text = match value {
        Value::Null => return Ok(String::new()),
        Value::String(text) => text.trim(),
        _ => return Err(Invalid::new("comment", rule())),
    };
    if text.chars().count() > COMMENT_MAX_CHARS || text.chars().any(char::is_control) {
        return Err(Invalid::new("comment", rule()));
    }
    Ok(text.to_owned())
}

/// The comment found inside an imported key file, made to fit the comment rule: control
/// characters become spaces, surrounding spaces go, and it is cut at 255 characters.
pub fn comment_from_key_file(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    cleaned.trim().chars().take(COMMENT_MAX_CHARS).collect()
}

/// `<algorithm> <base64>` plus ` <comment>` when there is one.
pub fn public_line(bare: &str, comment: &str) -> String {
    if comment.is_empty() {
        return bare.to_owned();
    }
    format!("{bare} {comment}")
}

/// `bits` as one of `allowed` (the first is the default when absent).
fn bits_in(bits: Option<&Value>, allowed: &[usize], key_type: &str) -> Result<usize, Invalid> {
    let Some(value) = bits else {
        return Ok(allowed[0]);
    };
    let mut sorted = allowed.to_vec();
    sorted.sort_unstable();
    let list: Vec<String> = sorted.iter().map(usize::to_string).collect();
    value
        .as_u64()
        .and_then(|bits| usize::try_from(bits).ok())
        .filter(|bits| allowed.contains(bits))
        .ok_or_else(|| {
            Invalid::new(
                "bits",
                format!(
                    "must be one of {} for type {key_type} (default {})",
                    list.join(", "),
                    allowed[0]
                ),
            )
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::{json, Value};

    use crate::model::key::{
        comment, comment_from_key_file, public_line, Curve, KeyPatch, KeySpec,
    };

    fn spec(value: Value) -> Result<KeySpec, String> {
        KeySpec::parse(&value["type"], value.get("bits")).map_err(|err| err.to_string())
    }

    fn patch(value: Value) -> Result<KeyPatch, String> {
        KeyPatch::parse(value.as_object().unwrap()).map_err(|err| err.to_string())
    }

    #[test]
    fn generation_defaults_are_rsa_3072_and_ecdsa_256() {
        assert_eq!(spec(json!({"type": "rsa"})), Ok(KeySpec::Rsa(3072)));
        assert_eq!(
            spec(json!({"type": "ecdsa"})),
            Ok(KeySpec::Ecdsa(Curve::P256))
        );
        assert_eq!(spec(json!({"type": "ed25519"})), Ok(KeySpec::Ed25519));
        assert_eq!(
            spec(json!({"type": "rsa", "bits": null})),
            Ok(KeySpec::Rsa(3072))
        );
    }

    #[test]
    fn every_listed_size_is_accepted() {
        for bits in [2048, 3072, 4096] {
            assert_eq!(
                spec(json!({"type": "rsa", "bits": bits})),
                Ok(KeySpec::Rsa(bits))
            );
        }
        assert_eq!(
            spec(json!({"type": "ecdsa", "bits": 384})),
            Ok(KeySpec::Ecdsa(Curve::P384))
        );
        assert_eq!(
            spec(json!({"type": "ecdsa", "bits": 521})),
            Ok(KeySpec::Ecdsa(Curve::P521))
        );
    }

    #[test]
    fn unlisted_sizes_are_rejected_naming_bits() {
        for body in [
            json!({"type": "rsa", "bits": 1024}),
            json!({"type": "rsa", "bits": 8192}),
            json!({"type": "rsa", "bits": "4096"}),
            json!({"type": "rsa", "bits": 3072.5}),
            json!({"type": "ecdsa", "bits": 512}),
            json!({"type": "ecdsa", "bits": 3072}),
            json!({"type": "ed25519", "bits": 256}),
        ] {
            let err = spec(body.clone()).unwrap_err();
            assert!(err.starts_with("bits: "), "{body}: {err}");
        }
    }

    #[test]
    fn unknown_types_are_rejected_naming_type() {
        for key_type in [json!("dsa"), json!("RSA"), json!("ssh-ed25519"), json!(1)] {
            let err = spec(json!({ "type": key_type })).unwrap_err();
            assert!(err.starts_with("type: "), "{err}");
        }
    }

    #[test]
    fn comment_of_255_characters_is_accepted_and_256_rejected() {
        assert_eq!(comment(&json!("c".repeat(255))).unwrap(), "c".repeat(255));
        assert!(comment(&json!("c".repeat(256))).is_err());
    }

    #[test]
    fn comment_with_a_line_break_is_rejected() {
        assert_eq!(comment(&json!("a\nb")).unwrap_err().field, "comment");
    }

    #[test]
    fn null_comment_is_empty() {
        assert_eq!(comment(&Value::Null).unwrap(), "");
    }

    #[test]
    fn key_file_comment_loses_control_characters_and_length() {
        assert_eq!(comment_from_key_file(" a\nb\t "), "a b");
        assert_eq!(comment_from_key_file(&"x".repeat(300)).len(), 255);
    }

    #[test]
    fn public_line_appends_only_a_non_empty_comment() {
        assert_eq!(public_line("ssh-ed25519 AAAA", ""), "ssh-ed25519 AAAA");
        assert_eq!(
            public_line("ssh-ed25519 AAAA", "me@box"),
            "ssh-ed25519 AAAA me@box"
        );
    }

    #[test]
    fn patch_takes_name_and_comment_and_ignores_read_only_fields() {
        let patch = patch(json!({
            "name": " New ", "comment": "c", "fingerprint": "SHA256:x", "id": "y",
            "type": "ssh-rsa", "private_key": null
        }))
        .unwrap();
        assert_eq!(patch.name.unwrap().as_str(), "New");
        assert_eq!(patch.comment.as_deref(), Some("c"));
    }

    #[test]
    fn patch_refuses_fields_that_would_change_the_key() {
        for field in ["private_key", "passphrase", "bits"] {
            let err = patch(json!({ field: "x" })).unwrap_err();
            assert!(err.starts_with(&format!("{field}: ")), "{err}");
        }
    }

    #[test]
    fn empty_patch_changes_nothing() {
        assert_eq!(patch(json!({})).unwrap(), KeyPatch::default());
    }
}
