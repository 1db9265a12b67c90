//! What import, generation and `ssh-add` hand back: a private key's facts (`KeyInfo`) and its
//! OpenSSH text ready to be sealed (`OpenSshKey`).

use crate::vault::Secret;

/// What every answer about a key needs, derived from its public half.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyInfo {
    /// The OpenSSH algorithm name (`ssh-ed25519`, `ssh-rsa`, `ecdsa-sha2-nistp256`, ...).
    pub key_type: &'static str,
    /// `<algorithm> <base64>`, no comment.
    pub public_key: String,
    /// `SHA256:` and the unpadded base64 digest: field 2 of `ssh-keygen -lf`.
    pub fingerprint: String,
    /// The comment inside the key file; `""` for an encrypted key read without its
    /// passphrase (OpenSSH keeps the comment in the encrypted part).
    pub comment: String,
}

/// A private key ready to be sealed: its facts and its OpenSSH text.
#[derive(Debug)]
pub struct OpenSshKey {
    pub info: KeyInfo,
    /// True when the text is passphrase-protected.
    pub encrypted: bool,
    /// `-----BEGIN OPENSSH PRIVATE KEY-----` ... with LF line ends and a final newline.
    pub text: Secret,
}
