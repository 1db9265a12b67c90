//! Opens a source's protected passwords with the source's own scheme (docs/import.md,
//! "Secrets"), only when the request says `"secrets": "import"`. The schemes themselves are
//! crypto and live in `vault::foreign`; this file picks the scheme and the key material.
//!
//! Invariants: a password that cannot be opened is a reason (`missing`), never an error and
//! never a value; key derivations are shared across the values of one import
//! (`DerivedKeys`), once per distinct salt and passphrase.

use crate::import::source::SourceSecret;
use crate::vault::foreign::{self, DerivedKeys};
use crate::vault::Secret;

/// mRemoteNG's built-in password when the user set none (docs/import.md, "mRemoteNG").
pub const MREMOTENG_DEFAULT_PASSWORD: &[u8] = b"mR3m";

/// Opens the passwords of one import.
pub struct Revealer<'a> {
    /// The request's `passphrase`, if any.
    passphrase: Option<&'a Secret>,
    /// The catalogue's `source_key` (Remmina's pref secret).
    source_key: Option<&'a Secret>,
    pub keys: DerivedKeys,
}

impl<'a> Revealer<'a> {
    pub fn new(passphrase: Option<&'a Secret>, source_key: Option<&'a Secret>) -> Revealer<'a> {
        Revealer {
            passphrase,
            source_key,
            keys: DerivedKeys::default(),
        }
    }

    /// The password `secret` protects, or why it could not be opened.
    pub fn reveal(&mut self, secret: &SourceSecret) -> Result<Secret, &'static str> {
        let given = self.passphrase.map(Secret::expose);
        let opened = match secret {
            SourceSecret::Plain(value) => Some(Secret::new(value.expose().to_vec())),
            SourceSecret::WinScp { hex, key } => foreign::winscp::reveal(hex, key),
            SourceSecret::SecureCrtV2(text) => {
                foreign::securecrt::reveal_v2(text, given.unwrap_or_default(), &mut self.keys)
            }
            SourceSecret::SecureCrtV1(text) => foreign::securecrt::reveal_v1(text),
            SourceSecret::MRemoteNg { base64, iterations } => {
                let password = given.unwrap_or(MREMOTENG_DEFAULT_PASSWORD);
                foreign::mremoteng::reveal(base64, *iterations, password, &mut self.keys)
            }
            SourceSecret::Unavailable(why) => return Err(why),
            SourceSecret::Remmina(base64) => match self.source_key {
                None => return Err("remmina.pref with its secret was not among the files"),
                Some(key) => foreign::remmina::reveal(base64, key.expose()),
            },
        };
        opened.ok_or(match self.passphrase {
            None => "could not be opened without a passphrase",
            Some(_) => "could not be opened with the given passphrase",
        })
    }
}
