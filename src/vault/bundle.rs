//! The sync bundle file: one device's whole synced state, sealed under the sync key
//! (docs/sync.md, "The bundle file").
//!
//! Layout: `magic(8) ‖ format_version(u16 BE) ‖ min_reader(u16 BE) ‖ header_len(u32 BE) ‖
//! header (JSON) ‖ sealed body`. The header names the KDF and its parameters, the salt, a
//! key-check value and the writing device; the body is `model::sync::wire`'s JSON sealed
//! with AES-256-GCM (`seal::seal_with`: version ‖ nonce ‖ ciphertext+tag) with every byte
//! before it as associated data, so a changed header fails to open as well.
//!
//! The sync key comes from the sync passphrase through PBKDF2-HMAC-SHA256 with a stored
//! iteration count, as the vault's own key (`kdf`); three keys are derived from it with
//! HMAC-SHA256: one seals, one makes the key-check value, one makes a secret field's `mac`
//! (equal for the same secret, so a merge tells one secret sealed twice from two secrets).
//! The check value tells a wrong passphrase from a damaged file before anything is
//! decrypted.
//!
//! Invariants: the only sync code that touches a cipher; keys live in `Zeroizing` memory and
//! their `Debug` is masked; an error names no byte of a key or plaintext; `open` either
//! returns the exact state that was written or an error (never an empty or partial state);
//! no input makes it panic.

use std::collections::BTreeMap;
use std::fmt;

use base64ct::{Base64, Encoding};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::model::sync::record::State;
use crate::model::sync::wire;
use crate::vault::kdf::{PBKDF2_ROUNDS_MAX, PBKDF2_ROUNDS_MIN, PBKDF2_ROUNDS_NEW, SALT_BYTES};
use crate::vault::random::random_bytes;
use crate::vault::seal::{open_with, seal_with};
use crate::vault::secret::{wipe_stack, Secret};

/// The first bytes of every bundle.
pub const MAGIC: &[u8; 8] = b"hm-sync\n";
/// The format this build writes.
pub const FORMAT_VERSION: u16 = 1;
/// The oldest reader that can read what this build writes.
pub const MIN_READER: u16 = 1;
/// The newest format this build reads: a bundle whose `min_reader` is higher is refused.
pub const READER_VERSION: u16 = 1;
/// The header's JSON is at most this long (it holds a few names and numbers).
pub const MAX_HEADER_BYTES: usize = 64 * 1024;
/// The KDF name in the header.
pub const KDF_NAME: &str = "pbkdf2-hmac-sha256";
/// Bytes of the key-check value.
pub const CHECK_BYTES: usize = 16;

const PREFIX_BYTES: usize = 8 + 2 + 2 + 4;
const BODY_AAD_LABEL: &[u8] = b"host-manager sync bundle body\0";
const SECRET_AAD: &[u8] = b"host-manager sync secret";

/// Why a bundle did not open. Names no secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BundleError {
    /// Not a bundle at all (another file, or a header that does not parse).
    NotABundle(String),
    /// Written for readers of at least `min_reader`; this build reads `READER_VERSION`.
    NewerFormat { min_reader: u16 },
    /// The bundle's KDF parameters differ from the key's: derive the key for its header.
    OtherKdf,
    /// The key-check value does not match: a wrong sync passphrase.
    WrongPassphrase,
    /// The body failed its AEAD check or its decoding: truncated, tampered or damaged.
    Damaged,
}

impl fmt::Display for BundleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BundleError::NotABundle(why) => write!(f, "not a sync bundle: {why}"),
            BundleError::NewerFormat { min_reader } => write!(
                f,
                "the bundle needs a reader of format {min_reader}; this build reads {READER_VERSION}"
            ),
            BundleError::OtherKdf => write!(f, "the bundle was written under other KDF parameters"),
            BundleError::WrongPassphrase => write!(f, "wrong sync passphrase"),
            BundleError::Damaged => write!(f, "the bundle is damaged or truncated"),
        }
    }
}

impl std::error::Error for BundleError {}

/// The KDF's parameters: PBKDF2-HMAC-SHA256 rounds and salt, shared by a sync folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KdfParams {
    pub iterations: u32,
    pub salt: [u8; SALT_BYTES],
}

impl KdfParams {
    /// Parameters for a new sync folder: `PBKDF2_ROUNDS_NEW` rounds, a fresh random salt.
    pub fn generate() -> KdfParams {
        let mut salt = [0u8; SALT_BYTES];
        random_bytes(&mut salt);
        KdfParams {
            iterations: PBKDF2_ROUNDS_NEW,
            salt,
        }
    }
}

/// The key of a sync passphrase: the sealing key, the secret-mac key and the key-check
/// value, all derived.
pub struct SyncKey {
    params: KdfParams,
    seal: Zeroizing<[u8; 32]>,
    mac: Zeroizing<[u8; 32]>,
    check: [u8; CHECK_BYTES],
}

impl fmt::Debug for SyncKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SyncKey(<redacted>, {} rounds)", self.params.iterations)
    }
}

impl SyncKey {
    /// Derives the key of `passphrase` (slow on purpose: PBKDF2; the caller caches it).
    /// Rounds outside the vault's accepted range are refused as `NotABundle`.
    pub fn derive(passphrase: &[u8], params: &KdfParams) -> Result<SyncKey, BundleError> {
        check_rounds(params.iterations)?;
        let mut master = Zeroizing::new([0u8; 32]);
        pbkdf2::pbkdf2_hmac::<Sha256>(passphrase, &params.salt, params.iterations, &mut master[..]);
        let seal = Zeroizing::new(subkey(&master, b"host-manager sync seal"));
        let mac = Zeroizing::new(subkey(&master, b"host-manager sync secret mac"));
        let full_check = Zeroizing::new(subkey(&master, b"host-manager sync key check"));
        let mut check = [0u8; CHECK_BYTES];
        check.copy_from_slice(&full_check[..CHECK_BYTES]);
        wipe_stack();
        Ok(SyncKey {
            params: params.clone(),
            seal,
            mac,
            check,
        })
    }

    pub fn params(&self) -> &KdfParams {
        &self.params
    }

    /// A secret field's value for record (`kind`, `id`): `{"sealed": base64, "mac": base64}`,
    /// the plaintext sealed as `seal_secret` does and its `secret_mac`, so two devices that
    /// sealed the same secret (with different nonces) are told it is the same value.
    pub fn secret_value(&self, kind: &str, id: &str, field: &str, plaintext: &[u8]) -> Value {
        let mut value = seal_secret(self, plaintext);
        if let Value::Object(map) = &mut value {
            let mac = self.secret_mac(kind, id, field, plaintext);
            map.insert("mac".to_owned(), Value::String(mac));
        }
        value
    }

    /// Base64 of HMAC-SHA256 under the secret-mac key of `kind ‖ 0 ‖ id ‖ 0 ‖ field ‖ 0 ‖
    /// plaintext`: equal for the same secret in the same field of the same record, and
    /// telling nothing of the plaintext without the sync passphrase.
    pub fn secret_mac(&self, kind: &str, id: &str, field: &str, plaintext: &[u8]) -> String {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.mac[..])
            .expect("HMAC takes any key length");
        for part in [kind.as_bytes(), id.as_bytes(), field.as_bytes()] {
            mac.update(part);
            mac.update(b"\0");
        }
        mac.update(plaintext);
        let tag = mac.finalize().into_bytes();
        wipe_stack();
        Base64::encode_string(&tag)
    }
}

fn subkey(master: &[u8; 32], label: &[u8]) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(master).expect("HMAC takes any key length");
    mac.update(label);
    mac.finalize().into_bytes().into()
}

fn check_rounds(rounds: u32) -> Result<(), BundleError> {
    if (PBKDF2_ROUNDS_MIN..=PBKDF2_ROUNDS_MAX).contains(&rounds) {
        Ok(())
    } else {
        Err(BundleError::NotABundle(format!(
            "{rounds} KDF rounds is out of range"
        )))
    }
}

/// A bundle's header, as read or to be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Read: the writer's format; ignored on write (this build writes `FORMAT_VERSION`).
    pub format_version: u16,
    /// Read: the oldest reader the writer allows; ignored on write (`MIN_READER`).
    pub min_reader: u16,
    pub kdf: KdfParams,
    /// Read: the stored key-check value; ignored on write (the key's own is written).
    pub check: [u8; CHECK_BYTES],
    pub device_id: String,
    pub device_name: String,
    /// Header fields from a newer writer, carried untouched.
    pub extra: BTreeMap<String, Value>,
}

#[derive(Serialize, Deserialize)]
struct HeaderJson {
    kdf: String,
    iterations: u32,
    salt: String,
    check: String,
    device_id: String,
    device_name: String,
    #[serde(flatten)]
    extra: BTreeMap<String, Value>,
}

/// The bundle of `state`, written by the device `header` names under `key`.
pub fn write(key: &SyncKey, header: &Header, state: &State) -> Vec<u8> {
    let json = HeaderJson {
        kdf: KDF_NAME.to_owned(),
        iterations: key.params.iterations,
        salt: Base64::encode_string(&key.params.salt),
        check: Base64::encode_string(&key.check),
        device_id: header.device_id.clone(),
        device_name: header.device_name.clone(),
        extra: header.extra.clone(),
    };
    let json = serde_json::to_vec(&json).expect("a header serializes to JSON");
    let mut out = Vec::with_capacity(PREFIX_BYTES + json.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_be_bytes());
    out.extend_from_slice(&MIN_READER.to_be_bytes());
    out.extend_from_slice(&(json.len() as u32).to_be_bytes());
    out.extend_from_slice(&json);
    let body = wire::encode(state);
    let sealed = seal_with(&key.seal, &body_aad(&out), &body);
    out.extend_from_slice(&sealed);
    out
}

fn body_aad(prefix_and_header: &[u8]) -> Vec<u8> {
    [BODY_AAD_LABEL, prefix_and_header].concat()
}

/// The header of a bundle, and where its sealed body starts. Reads no key.
pub fn read_header(bytes: &[u8]) -> Result<Header, BundleError> {
    split(bytes).map(|(header, _)| header)
}

fn split(bytes: &[u8]) -> Result<(Header, usize), BundleError> {
    let not = |why: &str| BundleError::NotABundle(why.to_owned());
    if bytes.len() < PREFIX_BYTES || &bytes[..8] != MAGIC {
        return Err(not("no sync bundle magic"));
    }
    let format_version = u16::from_be_bytes([bytes[8], bytes[9]]);
    let min_reader = u16::from_be_bytes([bytes[10], bytes[11]]);
    if min_reader > READER_VERSION {
        return Err(BundleError::NewerFormat { min_reader });
    }
    let len = u32::from_be_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]) as usize;
    if len > MAX_HEADER_BYTES {
        return Err(not("the header is too long"));
    }
    let end = PREFIX_BYTES + len;
    let json = bytes.get(PREFIX_BYTES..end).ok_or(BundleError::Damaged)?;
    let json: HeaderJson =
        serde_json::from_slice(json).map_err(|err| BundleError::NotABundle(err.to_string()))?;
    if json.kdf != KDF_NAME {
        return Err(BundleError::NotABundle(format!(
            "unknown KDF {:?}",
            json.kdf
        )));
    }
    check_rounds(json.iterations)?;
    let header = Header {
        format_version,
        min_reader,
        kdf: KdfParams {
            iterations: json.iterations,
            salt: decode_fixed(&json.salt).ok_or_else(|| not("the salt is malformed"))?,
        },
        check: decode_fixed(&json.check).ok_or_else(|| not("the check value is malformed"))?,
        device_id: json.device_id,
        device_name: json.device_name,
        extra: json.extra,
    };
    Ok((header, end))
}

fn decode_fixed<const N: usize>(text: &str) -> Option<[u8; N]> {
    Base64::decode_vec(text).ok()?.try_into().ok()
}

/// The header and state of a bundle. The key check runs before the body is touched.
pub fn open(key: &SyncKey, bytes: &[u8]) -> Result<(Header, State), BundleError> {
    let (header, end) = split(bytes)?;
    if header.kdf != key.params {
        return Err(BundleError::OtherKdf);
    }
    let same = header
        .check
        .iter()
        .zip(key.check.iter())
        .fold(0u8, |diff, (a, b)| diff | (a ^ b));
    if same != 0 {
        return Err(BundleError::WrongPassphrase);
    }
    let body = open_with(&key.seal, &body_aad(&bytes[..end]), &bytes[end..])
        .map_err(|_| BundleError::Damaged)?;
    let state = wire::decode(body.expose()).map_err(|_| BundleError::Damaged)?;
    Ok((header, state))
}

/// A secret field's value for a record: `{"sealed": base64}` under the sync key.
pub fn seal_secret(key: &SyncKey, plaintext: &[u8]) -> Value {
    let sealed = seal_with(&key.seal, SECRET_AAD, plaintext);
    serde_json::json!({ "sealed": Base64::encode_string(&sealed) })
}

/// The plaintext of a value `seal_secret` made; `Damaged` for anything else.
pub fn open_secret(key: &SyncKey, value: &Value) -> Result<Secret, BundleError> {
    let text = value
        .get("sealed")
        .and_then(Value::as_str)
        .ok_or(BundleError::Damaged)?;
    let sealed = Base64::decode_vec(text).map_err(|_| BundleError::Damaged)?;
    open_with(&key.seal, SECRET_AAD, &sealed).map_err(|_| BundleError::Damaged)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::{
        open, open_secret, read_header, seal_secret, write, BundleError, Header, KdfParams,
        SyncKey, MAGIC, READER_VERSION,
    };
    use crate::fuzz::{settings, Rng};
    use crate::model::sync::clock::Stamp;
    use crate::model::sync::record::State;
    use crate::vault::kdf::PBKDF2_ROUNDS_MIN;

    fn params() -> KdfParams {
        KdfParams {
            iterations: PBKDF2_ROUNDS_MIN,
            ..KdfParams::generate()
        }
    }

    fn header(params: &KdfParams) -> Header {
        Header {
            format_version: 0,
            min_reader: 0,
            kdf: params.clone(),
            check: [0; 16],
            device_id: "dev-1".into(),
            device_name: "laptop".into(),
            extra: BTreeMap::new(),
        }
    }

    fn sample(key: &SyncKey) -> State {
        let mut state = State::default();
        let record = state
            .records
            .entry(("host".into(), "h1".into()))
            .or_default();
        record.set("name", json!("web"), Stamp::new(1_000, 0, "dev-1"));
        record.set(
            "password",
            seal_secret(key, b"hunter2"),
            Stamp::new(1_000, 1, "dev-1"),
        );
        state
    }

    #[test]
    fn a_bundle_opens_to_the_state_written_and_its_secret_to_the_plaintext() {
        let params = params();
        let key = SyncKey::derive(b"sync words", &params).unwrap();
        let state = sample(&key);
        let bytes = write(&key, &header(&params), &state);
        let (read, opened) = open(&key, &bytes).unwrap();
        assert_eq!(opened, state);
        assert_eq!(read.device_name, "laptop");
        let sealed = &opened.records[&("host".into(), "h1".into())].fields["password"].value;
        assert_eq!(open_secret(&key, sealed).unwrap().expose(), b"hunter2");
        assert!(
            !bytes.windows(7).any(|w| w == b"hunter2"),
            "no plaintext secret"
        );
    }

    #[test]
    fn a_wrong_passphrase_is_told_by_the_key_check_and_other_kdf_params_apart() {
        let params = params();
        let key = SyncKey::derive(b"sync words", &params).unwrap();
        let bytes = write(&key, &header(&params), &sample(&key));
        let wrong = SyncKey::derive(b"other words", &params).unwrap();
        assert_eq!(
            open(&wrong, &bytes).unwrap_err(),
            BundleError::WrongPassphrase
        );
        let other = SyncKey::derive(b"sync words", &self::params()).unwrap();
        assert_eq!(open(&other, &bytes).unwrap_err(), BundleError::OtherKdf);
    }

    #[test]
    fn every_truncation_and_every_flipped_byte_fails_and_never_opens() {
        let params = params();
        let key = SyncKey::derive(b"sync words", &params).unwrap();
        let bytes = write(&key, &header(&params), &sample(&key));
        for len in 0..bytes.len() {
            assert!(open(&key, &bytes[..len]).is_err(), "truncated to {len}");
        }
        let body_start = bytes.len() - 40;
        assert_eq!(
            open(&key, &bytes[..body_start]).unwrap_err(),
            BundleError::Damaged
        );
        for at in 0..bytes.len() {
            let mut tampered = bytes.clone();
            tampered[at] ^= 0x01;
            assert!(open(&key, &tampered).is_err(), "byte {at} flipped");
        }
    }

    #[test]
    fn seeded_mutations_never_panic_and_never_open_as_another_state() {
        let params = params();
        let key = SyncKey::derive(b"sync words", &params).unwrap();
        let state = sample(&key);
        let bytes = write(&key, &header(&params), &state);
        let (iterations, seed) = settings("sync bundle", 0xB0_0D1E);
        let mut rng = Rng::new(seed);
        for _ in 0..iterations {
            let mut mutated = bytes.clone();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(mutated.len());
                match rng.below(4) {
                    0 => mutated[at] = rng.next() as u8,
                    1 => mutated.truncate(at),
                    2 => mutated.insert(at, rng.next() as u8),
                    _ => {
                        mutated.remove(at);
                    }
                }
                if mutated.is_empty() {
                    break;
                }
            }
            let _ = read_header(&mutated);
            if let Ok((_, opened)) = open(&key, &mutated) {
                assert_eq!(opened, state, "a mutation opened as another state");
            }
        }
    }

    #[test]
    fn a_newer_writers_extra_kind_and_header_fields_are_read_and_re_emitted() {
        let params = params();
        let key = SyncKey::derive(b"sync words", &params).unwrap();
        let mut state = sample(&key);
        state
            .records
            .entry(("x-snippet".into(), "s1".into()))
            .or_default()
            .set(
                "x-body",
                json!({"lines": ["ls"]}),
                Stamp::new(2_000, 0, "dev-2"),
            );
        state.ext.insert("x-layout".into(), json!({"columns": 3}));
        let mut newer = header(&params);
        newer.extra.insert("x-compression".into(), json!("none"));
        let bytes = write(&key, &newer, &state);
        let (read, opened) = open(&key, &bytes).unwrap();
        assert_eq!(read.extra, newer.extra);
        let again = write(&key, &read, &opened);
        let (reread, reopened) = open(&key, &again).unwrap();
        assert_eq!((reread.extra, reopened), (newer.extra, state));
    }

    #[test]
    fn a_bundle_for_newer_readers_and_a_foreign_file_are_refused_by_name() {
        let params = params();
        let key = SyncKey::derive(b"sync words", &params).unwrap();
        let mut bytes = write(&key, &header(&params), &sample(&key));
        assert!(matches!(
            read_header(b"PK\x03\x04 a zip"),
            Err(BundleError::NotABundle(_))
        ));
        bytes[10..12].copy_from_slice(&(READER_VERSION + 1).to_be_bytes());
        let newer = BundleError::NewerFormat {
            min_reader: READER_VERSION + 1,
        };
        assert_eq!(read_header(&bytes).unwrap_err(), newer);
        bytes[10..12].copy_from_slice(&READER_VERSION.to_be_bytes());
        assert!(read_header(&bytes).is_ok());
        assert_eq!(&bytes[..8], MAGIC);
    }

    #[test]
    fn a_secret_value_seals_the_plaintext_with_a_mac_equal_for_the_same_secret_in_the_same_field() {
        let key = SyncKey::derive(b"sync words", &params()).unwrap();
        let value = key.secret_value("host", "h1", "password", b"hunter2");
        let again = key.secret_value("host", "h1", "password", b"hunter2");
        assert_ne!(value["sealed"], again["sealed"], "a fresh nonce each time");
        assert_eq!(value["mac"], again["mac"]);
        assert_eq!(
            value["mac"],
            json!(key.secret_mac("host", "h1", "password", b"hunter2"))
        );
        assert_eq!(open_secret(&key, &value).unwrap().expose(), b"hunter2");
        let mac = |kind: &str, id: &str, field: &str, plain: &[u8]| {
            key.secret_mac(kind, id, field, plain)
        };
        let same = mac("host", "h1", "password", b"hunter2");
        assert_ne!(
            mac("host", "h1", "passphrase", b"hunter2"),
            same,
            "other field"
        );
        assert_ne!(
            mac("host", "h2", "password", b"hunter2"),
            same,
            "other record"
        );
        assert_ne!(mac("key", "h1", "password", b"hunter2"), same, "other kind");
        assert_ne!(
            mac("host", "h1", "password", b"hunter3"),
            same,
            "other secret"
        );
        assert_ne!(
            mac("host", "h1\0password", "", b"hunter2"),
            same,
            "separated parts"
        );
        let other = SyncKey::derive(b"other words", &params()).unwrap();
        assert_ne!(
            other.secret_mac("host", "h1", "password", b"hunter2"),
            same,
            "other passphrase"
        );
        let text = value.to_string();
        assert!(!text.contains("hunter2"), "no plaintext in the value");
        assert!(
            !format!("{value:?}{key:?}").contains("hunter2"),
            "nor in Debug"
        );
        assert_eq!(value.as_object().unwrap().len(), 2, "sealed and mac only");
    }

    #[test]
    fn debug_of_a_sync_key_shows_no_key_material() {
        let key = SyncKey::derive(b"sync words", &params()).unwrap();
        assert_eq!(format!("{key:?}"), "SyncKey(<redacted>, 100000 rounds)");
    }
}
