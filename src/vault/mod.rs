//! The vault. Placeholder until issue #4 lands: no master password, never locked.

/// The vault's state.
#[derive(Default)]
pub struct Vault {}

impl Vault {
    pub fn is_locked(&self) -> bool {
        false
    }
}
