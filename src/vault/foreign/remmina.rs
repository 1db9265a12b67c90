//! Remmina's 3DES password scheme (being built).

use crate::vault::Secret;

/// A `password=` value's base64 with `remmina.pref`'s `secret` (base64 text).
pub fn reveal(_base64: &str, _pref_secret: &[u8]) -> Option<Secret> {
    None
}
