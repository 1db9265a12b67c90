//! mRemoteNG's AES-GCM password scheme (being built).

use crate::vault::foreign::DerivedKeys;
use crate::vault::Secret;

/// A `Password` attribute's base64 with `password` (the user's or the default).
pub fn reveal(
    _base64: &str,
    _iterations: u32,
    _password: &[u8],
    _keys: &mut DerivedKeys,
) -> Option<Secret> {
    None
}
