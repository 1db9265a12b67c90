//! WinSCP's password scrambling (being built).

use crate::vault::Secret;

/// The password WinSCP scrambled into `hex` with `key` (user name + host name).
pub fn reveal(_hex: &str, _key: &str) -> Option<Secret> {
    None
}
