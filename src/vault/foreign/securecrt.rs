//! SecureCRT's saved-password schemes (being built).

use crate::vault::foreign::DerivedKeys;
use crate::vault::Secret;

/// `Password V2`: `02:<hex>` or `03:<hex>`, with the config passphrase (empty by default).
pub fn reveal_v2(_text: &str, _passphrase: &[u8], _keys: &mut DerivedKeys) -> Option<Secret> {
    None
}

/// The older `Password`: `u` + hex, two Blowfish-CBC passes.
pub fn reveal_v1(_text: &str) -> Option<Secret> {
    None
}
