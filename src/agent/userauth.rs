//! A sign request's data read as an SSH user-authentication request (RFC 4252 §7, and
//! OpenSSH's `publickey-hostbound-v00@openssh.com`): its session identifier, the key it
//! authenticates with and, host-bound, the server's host key, as OpenSSH's own agent reads it
//! before a destination-constrained key may sign.
//!
//! Invariants: pure, never panics (fuzzed with the parser); `None` for any data that is not
//! exactly such a request.

use crate::agent::wire::Reader;

/// The user-authentication request a sign request's data holds (RFC 4252 §7), when it is
/// one: its session identifier. `None` for any other data (`ssh-keygen -Y sign`, a git
/// commit signature).
pub fn userauth_session_id(data: &[u8]) -> Option<&[u8]> {
    /// SSH_MSG_USERAUTH_REQUEST (RFC 4252 §6).
    const USERAUTH_REQUEST: u8 = 50;
    let mut reader = Reader(data);
    let session_id = reader.string().ok()?;
    match reader.take(1).ok()? {
        [USERAUTH_REQUEST] => Some(session_id),
        _ => None,
    }
}

/// A sign request's data read as an SSH user-authentication request with a public key
/// (RFC 4252 §7, and OpenSSH's `publickey-hostbound-v00@openssh.com`), as OpenSSH's own
/// agent reads it before a destination-constrained key may sign.
#[derive(Debug, PartialEq, Eq)]
pub struct UserAuth<'a> {
    pub session_id: &'a [u8],
    /// The public key blob the request authenticates with.
    pub key_blob: &'a [u8],
    /// The server's host key blob, for the host-bound method only.
    pub host_key: Option<&'a [u8]>,
}

/// `data` as a complete public-key user-authentication request with its signature flag
/// set, for the `ssh-connection` service, and nothing after it; `None` for anything else
/// (`ssh-keygen -Y sign`, a git commit, arbitrary bytes).
pub fn userauth_request(data: &[u8]) -> Option<UserAuth<'_>> {
    /// SSH_MSG_USERAUTH_REQUEST (RFC 4252 §6).
    const USERAUTH_REQUEST: u8 = 50;
    const HOSTBOUND: &[u8] = b"publickey-hostbound-v00@openssh.com";
    let mut reader = Reader(data);
    let session_id = reader.string().ok()?;
    if reader.take(1).ok()? != [USERAUTH_REQUEST] {
        return None;
    }
    let _user = reader.string().ok()?;
    if reader.string().ok()? != b"ssh-connection" {
        return None;
    }
    let method = reader.string().ok()?;
    if method != b"publickey" && method != HOSTBOUND {
        return None;
    }
    if !reader.boolean().ok()? {
        return None;
    }
    let _algorithm = reader.string().ok()?;
    let key_blob = reader.string().ok()?;
    let host_key = match method == HOSTBOUND {
        true => Some(reader.string().ok()?),
        false => None,
    };
    reader.finish().ok()?;
    Some(UserAuth {
        session_id,
        key_blob,
        host_key,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::agent::userauth::{userauth_request, userauth_session_id, UserAuth};
    use crate::agent::wire::string;

    #[test]
    fn publickey_userauth_data_is_read_and_anything_short_of_it_is_not() {
        let head = [
            string(b"sid"),
            vec![50],
            string(b"user"),
            string(b"ssh-connection"),
        ]
        .concat();
        let plain = [
            head.clone(),
            string(b"publickey"),
            vec![1],
            string(b"ssh-ed25519"),
            string(b"blob"),
        ]
        .concat();
        assert_eq!(
            userauth_request(&plain),
            Some(UserAuth {
                session_id: b"sid",
                key_blob: b"blob",
                host_key: None
            })
        );
        let hostbound = [
            head.clone(),
            string(b"publickey-hostbound-v00@openssh.com"),
            vec![1],
            string(b"ssh-ed25519"),
            string(b"blob"),
            string(b"hostkey"),
        ]
        .concat();
        assert_eq!(
            userauth_request(&hostbound).and_then(|auth| auth.host_key),
            Some(&b"hostkey"[..])
        );
        let no_signature = [head.clone(), string(b"publickey"), vec![0]].concat();
        let other_service = [
            string(b"sid"),
            vec![50],
            string(b"user"),
            string(b"x"),
            string(b"publickey"),
            vec![1],
            string(b"a"),
            string(b"blob"),
        ]
        .concat();
        let trailing = [plain.clone(), vec![0]].concat();
        let sshsig = b"SSHSIG\0\0\0\x04file".to_vec();
        for data in [
            no_signature,
            other_service,
            trailing,
            sshsig,
            plain[..20].to_vec(),
        ] {
            assert_eq!(userauth_request(&data), None, "{data:?}");
        }
    }

    #[test]
    fn userauth_data_gives_its_session_id_and_other_data_gives_none() {
        let userauth = [string(b"session"), vec![50], string(b"user")].concat();
        assert_eq!(userauth_session_id(&userauth), Some(&b"session"[..]));
        let sshsig = [string(b"session"), vec![51]].concat();
        assert_eq!(userauth_session_id(&sshsig), None);
        assert_eq!(userauth_session_id(b"SSHSIG"), None);
    }
}
