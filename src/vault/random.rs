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

/// A new resource id: UUID v4, lowercase, hyphenated (docs/api.md, Common behaviour). Handlers and
/// the agent choose ids; the store only stores them. (uuid's own "v4" feature would pull a
/// second version of getrandom into the tree.)
pub fn new_id() -> String {
    let mut bytes = [0u8; 16];
    random_bytes(&mut bytes);
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .hyphenated()
        .to_string()
}

#[cfg(test)]
mod tests {
    use crate::vault::random::{new_id, random_bytes};

    #[test]
    fn two_draws_of_32_bytes_differ_and_are_not_all_zero() {
        let (mut one, mut two) = ([0u8; 32], [0u8; 32]);
        random_bytes(&mut one);
        random_bytes(&mut two);
        assert_ne!(one, two);
        assert_ne!(one, [0u8; 32]);
    }

    #[test]
    fn new_ids_are_distinct_lowercase_hyphenated_uuid_v4() {
        let (one, two) = (new_id(), new_id());
        assert_ne!(one, two);
        assert_eq!(one.len(), 36);
        assert_eq!(one, one.to_lowercase());
        assert_eq!(&one[14..15], "4", "version 4: {one}");
        assert!(
            matches!(&one[19..20], "8" | "9" | "a" | "b"),
            "RFC 4122 variant: {one}"
        );
        assert_eq!(
            one.match_indices('-').map(|(at, _)| at).collect::<Vec<_>>(),
            [8, 13, 18, 23]
        );
    }

    #[test]
    fn an_empty_buffer_is_left_empty() {
        let mut empty: [u8; 0] = [];
        random_bytes(&mut empty);
        assert!(empty.is_empty());
    }
}
