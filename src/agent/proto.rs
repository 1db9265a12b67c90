//! The ssh-agent wire protocol (draft-miller-ssh-agent, and OpenSSH's `PROTOCOL.agent` for
//! `session-bind@openssh.com`): message framing, a parser for every request the agent
//! answers, and the encoders of its replies. The bounds-checked reader is `wire`'s; a sign
//! request's data read as a user-authentication request is `userauth`'s (re-exported here).
//!
//! Invariants: pure functions over bytes, no I/O, no allocation that grows with a claimed
//! length (every length is checked against the bytes actually there first), and no panic
//! on any input (`tests::parser_never_panics_on_seeded_random_messages` feeds it a million
//! seeded messages through `scripts/fuzz`). A request borrows from the caller's buffer, so
//! the private key of an `ADD_IDENTITY` or the passphrase of an `UNLOCK` is never copied
//! here: the caller keeps it in a buffer wiped on drop.

pub use crate::agent::userauth::{userauth_request, userauth_session_id};
pub use crate::agent::wire::Malformed;
use crate::agent::wire::{frame, put_string, Reader};

/// The largest message accepted, type byte included (docs/agent.md "SSH agent"): as OpenSSH's own
/// agent. The largest real request, an RSA-16384 `ADD_IDENTITY`, is under 10 KiB; a sign
/// request carries a session hash and a few hundred bytes of user-auth data.
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024;

/// Client requests (draft-miller-ssh-agent §6.1).
pub const REQUEST_IDENTITIES: u8 = 11;
pub const SIGN_REQUEST: u8 = 13;
pub const ADD_IDENTITY: u8 = 17;
pub const REMOVE_IDENTITY: u8 = 18;
pub const REMOVE_ALL_IDENTITIES: u8 = 19;
pub const LOCK: u8 = 22;
pub const UNLOCK: u8 = 23;
pub const ADD_ID_CONSTRAINED: u8 = 25;
pub const EXTENSION: u8 = 27;

/// Agent replies.
pub const FAILURE: u8 = 5;
pub const SUCCESS: u8 = 6;
pub const IDENTITIES_ANSWER: u8 = 12;
pub const SIGN_RESPONSE: u8 = 14;

/// Sign request flags: an RSA signature with SHA-256 or SHA-512 instead of SHA-1.
pub const RSA_SHA2_256: u32 = 2;
pub const RSA_SHA2_512: u32 = 4;

/// Key constraints of `ADD_ID_CONSTRAINED`.
const CONSTRAIN_LIFETIME: u8 = 1;
const CONSTRAIN_CONFIRM: u8 = 2;
const CONSTRAIN_EXTENSION: u8 = 255;

/// OpenSSH's extension binding a connection to an SSH session (`PROTOCOL.agent` §1).
pub const SESSION_BIND: &[u8] = b"session-bind@openssh.com";

/// One request, borrowing its byte fields from the message.
#[derive(Debug, PartialEq, Eq)]
pub enum Request<'a> {
    Identities,
    Sign {
        /// The public key blob (`string key type`, then the key's public fields).
        key_blob: &'a [u8],
        data: &'a [u8],
        flags: u32,
    },
    /// `ADD_IDENTITY` or `ADD_ID_CONSTRAINED` of a key type this parser knows the fields of.
    Add(NewIdentity<'a>),
    /// An add whose key type is not one of ours (certificates, security keys, DSA): the
    /// fields that follow cannot be delimited, so nothing more is read.
    AddUnsupported {
        key_type: &'a [u8],
    },
    Remove {
        key_blob: &'a [u8],
    },
    RemoveAll,
    Lock {
        passphrase: &'a [u8],
    },
    Unlock {
        passphrase: &'a [u8],
    },
    SessionBind(SessionBind<'a>),
    /// An extension other than `session-bind@openssh.com`.
    OtherExtension {
        name: &'a [u8],
    },
    /// A message type the agent does not serve (smartcards, SSH1, unknown numbers).
    Unsupported {
        message_type: u8,
    },
}

/// The key of an add request.
#[derive(Debug, PartialEq, Eq)]
pub struct NewIdentity<'a> {
    /// The private key in the agent's encoding: `string key type` followed by its fields,
    /// as OpenSSH's private key format writes them. Secret.
    pub key: &'a [u8],
    pub key_type: &'a [u8],
    pub comment: &'a [u8],
    pub constraints: Constraints,
}

/// The constraints an add asked for.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Constraints {
    /// `ssh-add -c`: confirm every use.
    pub confirm: bool,
    /// `ssh-add -t SECS`: forget the key after this many seconds.
    pub lifetime: Option<u32>,
    /// The name of a constraint extension (e.g. `restrict-destination-v00@openssh.com`);
    /// its contents cannot be delimited, so it ends the list.
    pub extension: Option<Vec<u8>>,
}

/// `session-bind@openssh.com`: the server's host key, the session identifier of the key
/// exchange, the server's signature over it, and whether the binding is for forwarding.
#[derive(Debug, PartialEq, Eq)]
pub struct SessionBind<'a> {
    pub host_key: &'a [u8],
    pub session_id: &'a [u8],
    pub signature: &'a [u8],
    pub forwarding: bool,
}

/// The body length a 4-byte frame header announces, when it is acceptable.
pub fn frame_length(header: [u8; 4]) -> Result<usize, Malformed> {
    let length = u32::from_be_bytes(header);
    match usize::try_from(length) {
        Ok(bytes) if bytes > 0 && bytes <= MAX_MESSAGE_BYTES => Ok(bytes),
        _ => Err(Malformed::BadLength(length)),
    }
}

/// Parses one message body (type byte and contents, without the length).
pub fn parse(message: &[u8]) -> Result<Request<'_>, Malformed> {
    let Some((&message_type, body)) = message.split_first() else {
        return Err(Malformed::Truncated);
    };
    let mut reader = Reader(body);
    let request = match message_type {
        REQUEST_IDENTITIES => Request::Identities,
        SIGN_REQUEST => Request::Sign {
            key_blob: reader.string()?,
            data: reader.string()?,
            flags: reader.u32()?,
        },
        ADD_IDENTITY | ADD_ID_CONSTRAINED => {
            return parse_add(reader, message_type == ADD_ID_CONSTRAINED)
        }
        REMOVE_IDENTITY => Request::Remove {
            key_blob: reader.string()?,
        },
        REMOVE_ALL_IDENTITIES => Request::RemoveAll,
        LOCK => Request::Lock {
            passphrase: reader.string()?,
        },
        UNLOCK => Request::Unlock {
            passphrase: reader.string()?,
        },
        EXTENSION => {
            let name = reader.string()?;
            if name != SESSION_BIND {
                // An unknown extension's contents are its own business: not judged.
                return Ok(Request::OtherExtension { name });
            }
            Request::SessionBind(SessionBind {
                host_key: reader.string()?,
                session_id: reader.string()?,
                signature: reader.string()?,
                forwarding: reader.boolean()?,
            })
        }
        other => {
            return Ok(Request::Unsupported {
                message_type: other,
            })
        }
    };
    reader.finish()?;
    Ok(request)
}

/// `SSH_AGENT_FAILURE`, framed.
pub fn failure() -> Vec<u8> {
    frame(&[FAILURE])
}

/// `SSH_AGENT_SUCCESS`, framed.
pub fn success() -> Vec<u8> {
    frame(&[SUCCESS])
}

/// `SSH_AGENT_IDENTITIES_ANSWER` listing `(key blob, comment)` pairs, framed, and the
/// positions of the pairs left out. OpenSSH's clients refuse an answer over
/// `MAX_MESSAGE_BYTES` (docs/agent.md "SSH agent"), so a pair that would push the message past it
/// is left out and the ones after it are still tried: every key that fits is listed.
pub fn identities_answer<'a>(
    identities: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
) -> (Vec<u8>, Vec<usize>) {
    let mut body = vec![IDENTITIES_ANSWER, 0, 0, 0, 0];
    let mut count: u32 = 0;
    let mut left_out = Vec::new();
    for (position, (blob, comment)) in identities.into_iter().enumerate() {
        let entry = 8usize
            .saturating_add(blob.len())
            .saturating_add(comment.len());
        if body.len().saturating_add(entry) > MAX_MESSAGE_BYTES {
            left_out.push(position);
            continue;
        }
        put_string(&mut body, blob);
        put_string(&mut body, comment);
        count = count.saturating_add(1);
    }
    body[1..5].copy_from_slice(&count.to_be_bytes());
    (frame(&body), left_out)
}

/// An empty `SSH_AGENT_IDENTITIES_ANSWER`, framed (a locked vault lists no keys).
pub fn no_identities() -> Vec<u8> {
    frame(&[IDENTITIES_ANSWER, 0, 0, 0, 0])
}

/// `SSH_AGENT_SIGN_RESPONSE` carrying a signature blob (`string algorithm`, `string
/// signature`), framed.
pub fn sign_response(signature: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(signature.len() + 5);
    body.push(SIGN_RESPONSE);
    put_string(&mut body, signature);
    frame(&body)
}

/// The number of `string`/`mpint` fields that follow the key type in the agent encoding
/// of a private key (draft-miller-ssh-agent §4.2).
fn private_fields(key_type: &[u8]) -> Option<usize> {
    match key_type {
        // ENC(A), k || ENC(A)
        b"ssh-ed25519" => Some(2),
        // curve name, Q, d
        b"ecdsa-sha2-nistp256" | b"ecdsa-sha2-nistp384" | b"ecdsa-sha2-nistp521" => Some(3),
        // n, e, d, iqmp, p, q
        b"ssh-rsa" => Some(6),
        _ => None,
    }
}

fn parse_add(mut reader: Reader<'_>, constrained: bool) -> Result<Request<'_>, Malformed> {
    let start = reader.0;
    let key_type = reader.string()?;
    let Some(fields) = private_fields(key_type) else {
        return Ok(Request::AddUnsupported { key_type });
    };
    for _ in 0..fields {
        reader.string()?;
    }
    let key = &start[..start.len() - reader.0.len()];
    let comment = reader.string()?;
    let mut constraints = Constraints::default();
    while constrained && !reader.0.is_empty() {
        match reader.take(1)? {
            [CONSTRAIN_LIFETIME] => constraints.lifetime = Some(reader.u32()?),
            [CONSTRAIN_CONFIRM] => constraints.confirm = true,
            [CONSTRAIN_EXTENSION] => {
                constraints.extension = Some(reader.string()?.to_vec());
                // The extension's own fields follow, in a layout only it knows.
                reader.0 = &[];
            }
            _ => return Err(Malformed::BadValue),
        }
    }
    reader.finish()?;
    Ok(Request::Add(NewIdentity {
        key,
        key_type,
        comment,
        constraints,
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::agent::proto::{
        failure, frame_length, identities_answer, no_identities, parse, sign_response, success,
        userauth_request, userauth_session_id, Constraints, Malformed, NewIdentity, Request,
        SessionBind, MAX_MESSAGE_BYTES,
    };
    use crate::agent::wire::string;
    use crate::fuzz::Rng;

    fn message(message_type: u8, fields: &[&[u8]]) -> Vec<u8> {
        let mut out = vec![message_type];
        for field in fields {
            out.extend_from_slice(field);
        }
        out
    }

    /// An ed25519 key in the agent's add encoding (type, public, private), made of marks.
    fn ed25519_key() -> Vec<u8> {
        [string(b"ssh-ed25519"), string(&[1; 32]), string(&[2; 64])].concat()
    }

    #[test]
    fn frame_length_of_one_and_of_the_maximum_is_accepted() {
        assert_eq!(frame_length(1u32.to_be_bytes()), Ok(1));
        let max = u32::try_from(MAX_MESSAGE_BYTES).unwrap();
        assert_eq!(frame_length(max.to_be_bytes()), Ok(MAX_MESSAGE_BYTES));
    }

    #[test]
    fn frame_length_of_zero_or_one_byte_over_the_maximum_is_malformed() {
        let over = u32::try_from(MAX_MESSAGE_BYTES + 1).unwrap();
        assert_eq!(
            frame_length(over.to_be_bytes()),
            Err(Malformed::BadLength(over))
        );
        assert_eq!(frame_length([0; 4]), Err(Malformed::BadLength(0)));
        assert_eq!(frame_length([0xff; 4]), Err(Malformed::BadLength(u32::MAX)));
    }

    #[test]
    fn request_identities_is_read_and_with_a_trailing_byte_is_malformed() {
        assert_eq!(parse(&[11]), Ok(Request::Identities));
        assert_eq!(parse(&[11, 0]), Err(Malformed::TrailingBytes));
    }

    #[test]
    fn empty_message_is_truncated() {
        assert_eq!(parse(&[]), Err(Malformed::Truncated));
    }

    #[test]
    fn sign_request_gives_blob_data_and_flags() {
        let bytes = message(
            13,
            &[&string(b"blob"), &string(b"data"), &4u32.to_be_bytes()],
        );
        assert_eq!(
            parse(&bytes),
            Ok(Request::Sign {
                key_blob: b"blob",
                data: b"data",
                flags: 4
            })
        );
    }

    #[test]
    fn sign_request_without_its_flags_is_truncated() {
        let bytes = message(13, &[&string(b"blob"), &string(b"data"), &[0, 0, 0]]);
        assert_eq!(parse(&bytes), Err(Malformed::Truncated));
    }

    #[test]
    fn string_claiming_one_byte_more_than_is_there_is_truncated() {
        let mut bytes = vec![18];
        bytes.extend_from_slice(&5u32.to_be_bytes());
        bytes.extend_from_slice(b"four");
        assert_eq!(parse(&bytes), Err(Malformed::Truncated));
        bytes.push(b'!');
        assert_eq!(parse(&bytes), Ok(Request::Remove { key_blob: b"four!" }));
    }

    #[test]
    fn string_claiming_four_gib_is_truncated_without_allocating() {
        let bytes = message(22, &[&[0xff, 0xff, 0xff, 0xff]]);
        assert_eq!(parse(&bytes), Err(Malformed::Truncated));
    }

    #[test]
    fn add_identity_delimits_the_key_and_reads_the_comment() {
        let key = ed25519_key();
        let bytes = message(17, &[&key, &string(b"me@laptop")]);
        assert_eq!(
            parse(&bytes),
            Ok(Request::Add(NewIdentity {
                key: &key,
                key_type: b"ssh-ed25519",
                comment: b"me@laptop",
                constraints: Constraints::default(),
            }))
        );
    }

    #[test]
    fn add_identity_with_bytes_after_the_comment_is_malformed_but_constrained_reads_them() {
        let key = ed25519_key();
        let plain = message(17, &[&key, &string(b"c"), &[2]]);
        assert_eq!(parse(&plain), Err(Malformed::TrailingBytes));
        let constrained = message(25, &[&key, &string(b"c"), &[2, 1, 0, 0, 0, 60]]);
        let Ok(Request::Add(identity)) = parse(&constrained) else {
            panic!("a constrained add");
        };
        assert_eq!(
            identity.constraints,
            Constraints {
                confirm: true,
                lifetime: Some(60),
                extension: None
            }
        );
    }

    #[test]
    fn constraint_extension_is_named_and_ends_the_list() {
        let key = ed25519_key();
        let bytes = message(
            25,
            &[
                &key,
                &string(b""),
                &[255],
                &string(b"restrict-destination-v00@openssh.com"),
                b"opaque",
            ],
        );
        let Ok(Request::Add(identity)) = parse(&bytes) else {
            panic!("a constrained add");
        };
        assert_eq!(
            identity.constraints.extension.as_deref(),
            Some(&b"restrict-destination-v00@openssh.com"[..])
        );
    }

    #[test]
    fn undefined_constraint_number_is_malformed() {
        let key = ed25519_key();
        let bytes = message(25, &[&key, &string(b""), &[3]]);
        assert_eq!(parse(&bytes), Err(Malformed::BadValue));
    }

    #[test]
    fn rsa_key_of_five_fields_is_truncated_and_six_is_read() {
        let five: Vec<u8> = std::iter::repeat_n(string(&[7; 8]), 5).flatten().collect();
        let short = message(17, &[&string(b"ssh-rsa"), &five, &string(b"")]);
        // The comment is taken as the sixth field, then the comment itself is missing.
        assert_eq!(parse(&short), Err(Malformed::Truncated));
        let full = message(
            17,
            &[&string(b"ssh-rsa"), &five, &string(&[7; 8]), &string(b"")],
        );
        assert!(matches!(parse(&full), Ok(Request::Add(_))));
    }

    #[test]
    fn add_of_an_unknown_key_type_is_unsupported_not_malformed() {
        let bytes = message(17, &[&string(b"ssh-dss"), b"anything at all"]);
        assert_eq!(
            parse(&bytes),
            Ok(Request::AddUnsupported {
                key_type: b"ssh-dss"
            })
        );
    }

    #[test]
    fn session_bind_reads_its_four_fields() {
        let bytes = message(
            27,
            &[
                &string(b"session-bind@openssh.com"),
                &string(b"hostkey"),
                &string(b"sid"),
                &string(b"sig"),
                &[1],
            ],
        );
        assert_eq!(
            parse(&bytes),
            Ok(Request::SessionBind(SessionBind {
                host_key: b"hostkey",
                session_id: b"sid",
                signature: b"sig",
                forwarding: true,
            }))
        );
    }

    #[test]
    fn session_bind_with_a_boolean_of_two_is_malformed() {
        let bytes = message(
            27,
            &[
                &string(b"session-bind@openssh.com"),
                &string(b"k"),
                &string(b"s"),
                &string(b"g"),
                &[2],
            ],
        );
        assert_eq!(parse(&bytes), Err(Malformed::BadValue));
    }

    #[test]
    fn other_extensions_and_message_types_are_unsupported() {
        let query = message(27, &[&string(b"query"), b"whatever"]);
        assert_eq!(
            parse(&query),
            Ok(Request::OtherExtension { name: b"query" })
        );
        for message_type in [0, 1, 20, 21, 24, 26, 28, 255] {
            assert_eq!(
                parse(&[message_type, 9, 9]),
                Ok(Request::Unsupported { message_type }),
                "{message_type}"
            );
        }
    }

    #[test]
    fn lock_unlock_and_remove_all_are_read() {
        assert_eq!(
            parse(&message(22, &[&string(b"pw")])),
            Ok(Request::Lock { passphrase: b"pw" })
        );
        assert_eq!(
            parse(&message(23, &[&string(b"pw")])),
            Ok(Request::Unlock { passphrase: b"pw" })
        );
        assert_eq!(parse(&[19]), Ok(Request::RemoveAll));
    }

    #[test]
    fn replies_are_framed_with_their_length() {
        assert_eq!(failure(), vec![0, 0, 0, 1, 5]);
        assert_eq!(success(), vec![0, 0, 0, 1, 6]);
        assert_eq!(
            sign_response(b"sig"),
            vec![0, 0, 0, 8, 14, 0, 0, 0, 3, b's', b'i', b'g']
        );
        let answer = identities_answer([(&b"k1"[..], &b"c"[..]), (&b"k2"[..], &b""[..])]);
        let mut expected = vec![0, 0, 0, 26, 12, 0, 0, 0, 2];
        expected.extend_from_slice(&[0, 0, 0, 2, b'k', b'1', 0, 0, 0, 1, b'c']);
        expected.extend_from_slice(&[0, 0, 0, 2, b'k', b'2', 0, 0, 0, 0]);
        assert_eq!(answer, (expected, vec![]));
        assert_eq!(identities_answer([]).0, vec![0, 0, 0, 5, 12, 0, 0, 0, 0]);
        assert_eq!(no_identities(), vec![0, 0, 0, 5, 12, 0, 0, 0, 0]);
    }

    #[test]
    fn identities_that_would_pass_256_kib_are_left_out_and_smaller_later_ones_still_listed() {
        // Header 5 bytes, then 8 bytes of lengths per pair: a first pair of blob
        // `big - 13` fills the message exactly.
        let exact = vec![1u8; MAX_MESSAGE_BYTES - 13];
        let (answer, left_out) = identities_answer([(&exact[..], &b""[..])]);
        assert_eq!(left_out, Vec::<usize>::new());
        assert_eq!(answer.len(), MAX_MESSAGE_BYTES + 4);
        let huge = vec![2u8; MAX_MESSAGE_BYTES / 2];
        let small = [3u8; 32];
        let (answer, left_out) = identities_answer([
            (&huge[..], &b"one"[..]),
            (&huge[..], &b"two"[..]),
            (&small[..], &b"three"[..]),
        ]);
        assert_eq!(left_out, vec![1], "the second huge key does not fit");
        let body = &answer[4..];
        assert!(body.len() <= MAX_MESSAGE_BYTES, "{}", body.len());
        assert_eq!(body[1..5], 2u32.to_be_bytes(), "two pairs listed");
        assert!(body.ends_with(b"three"));
    }

    /// xorshift64*, as src/fuzz.rs: seeded, so a failure replays with `FUZZ_SEED`.
    /// Well-formed messages of every type the parser reads, as seeds for mutation.
    fn seeds() -> Vec<Vec<u8>> {
        let key = ed25519_key();
        let rsa: Vec<u8> = [string(b"ssh-rsa")]
            .into_iter()
            .chain(std::iter::repeat_n(string(&[9; 16]), 6))
            .flatten()
            .collect();
        vec![
            vec![11],
            message(13, &[&key, &string(b"data"), &2u32.to_be_bytes()]),
            message(17, &[&key, &string(b"comment")]),
            message(17, &[&rsa, &string(b"")]),
            message(25, &[&key, &string(b""), &[1, 0, 0, 0, 9, 2]]),
            message(18, &[&key]),
            vec![19],
            message(22, &[&string(b"pw")]),
            message(23, &[&string(b"pw")]),
            message(
                27,
                &[
                    &string(b"session-bind@openssh.com"),
                    &key,
                    &string(&[3; 32]),
                    &string(b"sig"),
                    &[0],
                ],
            ),
        ]
    }

    /// One fuzz input: random bytes, or a seed with bytes flipped, cut, inserted or a
    /// length field set to an edge value.
    fn input(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
        if rng.below(8) == 0 {
            let len = rng.below(64);
            return (0..len).map(|_| rng.next() as u8).collect();
        }
        let mut bytes = seeds[rng.below(seeds.len())].clone();
        for _ in 0..=rng.below(4) {
            let at = rng.below(bytes.len().max(1));
            match rng.below(5) {
                0 if !bytes.is_empty() => bytes[at] = rng.next() as u8,
                1 => bytes.truncate(at),
                2 => bytes.insert(at.min(bytes.len()), rng.next() as u8),
                3 if at + 4 <= bytes.len() => {
                    let edges = [0u32, 1, 0x7fff_ffff, u32::MAX, 256 * 1024];
                    let value = edges[rng.below(edges.len())];
                    bytes[at..at + 4].copy_from_slice(&value.to_be_bytes());
                }
                _ => bytes.extend((0..rng.below(8)).map(|_| rng.next() as u8)),
            }
        }
        bytes
    }

    /// `scripts/fuzz` runs a million (`FUZZ_ITERATIONS`); `cargo test` 20,000. The seed is
    /// printed so a failure replays with `FUZZ_SEED`.
    #[test]
    fn parser_never_panics_on_seeded_random_messages() {
        let (iterations, seed) = crate::fuzz::settings("agent parser", 0x5eed_a9e7);
        let seeds = seeds();
        let mut rng = Rng::new(seed);
        let (mut parsed, mut refused) = (0u64, 0u64);
        for _ in 0..iterations {
            let bytes = input(&mut rng, &seeds);
            let mut header = [0u8; 4];
            for (slot, byte) in header.iter_mut().zip(bytes.iter()) {
                *slot = *byte;
            }
            let _ = frame_length(header);
            match parse(&bytes) {
                Ok(Request::Sign { data, .. }) => {
                    let _ = userauth_session_id(data);
                    let _ = userauth_request(data);
                    parsed += 1;
                }
                Ok(_) => parsed += 1,
                Err(_) => refused += 1,
            }
        }
        eprintln!("agent parser fuzz: {parsed} read, {refused} refused, no panic");
        assert_eq!(parsed + refused, iterations);
        assert!(
            parsed > iterations / 10 && refused > iterations / 10,
            "the inputs reach both outcomes"
        );
    }
}
