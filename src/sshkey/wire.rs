//! SSH wire types (RFC 4251 §5) and the binary `openssh-key-v1` container (OpenSSH's
//! PROTOCOL.key), read and written by hand where ssh-key offers no way in: the ECDSA
//! workaround and keys that `ssh-add` sends to the agent.
//!
//! Invariants: reading never panics and never reads past its slice (every length is checked
//! against what is left); a buffer that may hold private key bytes is sized once and wiped
//! on drop; nothing here logs.

use zeroize::Zeroizing;

/// The parts of a binary `openssh-key-v1` container (PROTOCOL.key) the key readers need.
pub struct Container<'a> {
    /// The cipher name (`none` for an unencrypted key).
    pub cipher: &'a [u8],
    /// The public key blob.
    pub public: &'a [u8],
    /// The private section: plain for cipher `none`, else the ciphertext.
    pub private: &'a [u8],
    /// What follows the private section: the AEAD tag, if any.
    pub rest: &'a [u8],
}

const OPENSSH_MAGIC: &[u8] = b"openssh-key-v1\0";

impl<'a> Container<'a> {
    /// `None` when `binary` is not a container holding one key.
    pub fn parse(binary: &'a [u8]) -> Option<Container<'a>> {
        let mut reader = Reader(binary.strip_prefix(OPENSSH_MAGIC)?);
        let cipher = reader.string()?;
        let _kdf = reader.string()?;
        let _kdf_options = reader.string()?;
        if reader.u32()? != 1 {
            return None;
        }
        let public = reader.string()?;
        let private = reader.string()?;
        Some(Container {
            cipher,
            public,
            private,
            rest: reader.0,
        })
    }
}

/// Reads SSH wire types (RFC 4251 §5) from a byte slice; `.0` is what is left unread.
pub struct Reader<'a>(pub &'a [u8]);

impl<'a> Reader<'a> {
    pub fn take(&mut self, len: usize) -> Option<&'a [u8]> {
        if self.0.len() < len {
            return None;
        }
        let (head, tail) = self.0.split_at(len);
        self.0 = tail;
        Some(head)
    }

    pub fn u32(&mut self) -> Option<u32> {
        let bytes: [u8; 4] = self.take(4)?.try_into().ok()?;
        Some(u32::from_be_bytes(bytes))
    }

    pub fn string(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.u32()?).ok()?;
        self.take(len)
    }
}

/// An unencrypted `openssh-key-v1` container around `public` and a plain `section`.
pub fn unencrypted(public: &[u8], section: &[u8]) -> Zeroizing<Vec<u8>> {
    let mut out = Zeroizing::new(Vec::with_capacity(
        OPENSSH_MAGIC.len() + 4 * 6 + 8 + public.len() + section.len(),
    ));
    out.extend_from_slice(OPENSSH_MAGIC);
    put_string(&mut out, b"none");
    put_string(&mut out, b"none");
    put_string(&mut out, b"");
    put_u32(&mut out, 1);
    put_string(&mut out, public);
    put_string(&mut out, section);
    out
}

/// Writes a `uint32`.
pub fn put_u32(out: &mut Vec<u8>, value: usize) {
    // Every length here comes from a request body under 1 MiB.
    let value = u32::try_from(value).unwrap_or(u32::MAX);
    out.extend_from_slice(&value.to_be_bytes());
}

/// Writes a `string`: its length, then its bytes.
pub fn put_string(out: &mut Vec<u8>, bytes: &[u8]) {
    put_u32(out, bytes.len());
    out.extend_from_slice(bytes);
}
