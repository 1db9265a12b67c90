//! The service's one source of randomness: bytes from the operating system.
//!
//! Invariants: the only place that reads the OS's random source (getrandom, through
//! aes-gcm's `OsRng`); every key, nonce, salt, token, resource id and generated SSH key
//! draws from `random_bytes`, so there is one source to audit and no user-space generator
//! that could be seeded badly or forked. It never falls back to anything weaker: when the
//! OS cannot give randomness, the call panics (a handler's panic answers 500).

use aes_gcm::aead::rand_core::RngCore;
use aes_gcm::aead::OsRng;

/// Fills `out` with random bytes from the OS.
pub fn random_bytes(out: &mut [u8]) {
    OsRng.fill_bytes(out);
}

#[cfg(test)]
mod tests {
    use crate::vault::random::random_bytes;

    #[test]
    fn two_draws_of_32_bytes_differ_and_are_not_all_zero() {
        let (mut one, mut two) = ([0u8; 32], [0u8; 32]);
        random_bytes(&mut one);
        random_bytes(&mut two);
        assert_ne!(one, two);
        assert_ne!(one, [0u8; 32]);
    }

    #[test]
    fn an_empty_buffer_is_left_empty() {
        let mut empty: [u8; 0] = [];
        random_bytes(&mut empty);
        assert!(empty.is_empty());
    }
}
