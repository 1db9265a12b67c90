//! The SSH wire encodings the agent reads and writes (RFC 4251 §5): a reader that checks
//! every length against the bytes there, `string` fields, message framing, and `Malformed`,
//! why a message could not be read.
//!
//! Invariants: never reads past its slice and never allocates from a claimed length.

/// Why a message could not be read. The connection it came on is closed.
#[derive(Debug, PartialEq, Eq)]
pub enum Malformed {
    /// A length of 0, or above `MAX_MESSAGE_BYTES`.
    BadLength(u32),
    /// The message ends inside a field.
    Truncated,
    /// Bytes left after the last field.
    TrailingBytes,
    /// A boolean other than 0 or 1, or a constraint number the protocol does not define.
    BadValue,
}

/// Appends `bytes` as an SSH `string` (RFC 4251 §5): a 4-byte length, then the bytes.
pub fn put_string(out: &mut Vec<u8>, bytes: &[u8]) {
    // Every field written here is far below 4 GiB (a message is at most 256 KiB).
    let length = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&length.to_be_bytes());
    out.extend_from_slice(bytes);
}

/// `body` framed as a message: its 4-byte length, then the body.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 4);
    put_string(&mut out, body);
    out
}

/// Reads SSH wire types (RFC 4251 §5) from a byte slice, checking every length against
/// what is left.
pub struct Reader<'a>(pub &'a [u8]);

impl<'a> Reader<'a> {
    pub fn take(&mut self, len: usize) -> Result<&'a [u8], Malformed> {
        if self.0.len() < len {
            return Err(Malformed::Truncated);
        }
        let (head, tail) = self.0.split_at(len);
        self.0 = tail;
        Ok(head)
    }

    pub fn u32(&mut self) -> Result<u32, Malformed> {
        let bytes = self.take(4)?;
        let mut word = [0u8; 4];
        word.copy_from_slice(bytes);
        Ok(u32::from_be_bytes(word))
    }

    pub fn string(&mut self) -> Result<&'a [u8], Malformed> {
        let length = usize::try_from(self.u32()?).map_err(|_| Malformed::Truncated)?;
        self.take(length)
    }

    pub fn boolean(&mut self) -> Result<bool, Malformed> {
        match self.take(1)? {
            [0] => Ok(false),
            [1] => Ok(true),
            _ => Err(Malformed::BadValue),
        }
    }

    pub fn finish(&self) -> Result<(), Malformed> {
        match self.0.is_empty() {
            true => Ok(()),
            false => Err(Malformed::TrailingBytes),
        }
    }
}

/// `bytes` as an SSH `string`, for tests that build messages.
#[cfg(test)]
pub fn string(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    put_string(&mut out, bytes);
    out
}
