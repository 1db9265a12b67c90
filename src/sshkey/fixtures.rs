//! Test keys made once by ssh-keygen, shared by the unit tests of every `sshkey` file, and
//! the small helpers that read them.

use crate::vault::Secret;

// Keys made once by ssh-keygen (`ssh-keygen -q -t TYPE [-b BITS] -N PASSPHRASE -C COMMENT
// -f FILE`), so that these tests run without it; tests/it/keys.rs checks against a live
// ssh-keygen. "secret" is the passphrase of the encrypted ones.
pub const ED25519_SECRET: &str = include_str!("testdata/ed25519-secret");
pub const ED25519_SECRET_PUBLIC: &str = include_str!("testdata/ed25519-secret.pub");
pub const RSA_2048: &str = include_str!("testdata/rsa-2048");
pub const RSA_2048_PUBLIC: &str = include_str!("testdata/rsa-2048.pub");
pub const RSA_2047_PUBLIC: &str = include_str!("testdata/rsa-2047.pub");
pub const RSA_1024_SECRET: &str = include_str!("testdata/rsa-1024-secret");
pub const DSA: &str = include_str!("testdata/dsa");
// A user certificate made by `ssh-keygen -s CA -I forever-id -n alice,bob -z 7 user.pub`
// (no `-V`: valid forever, `valid_before` 2^64-1), and the key it certifies.
pub const USER_ED25519_PUBLIC: &str = include_str!("testdata/user-ed25519.pub");
pub const USER_ED25519_FOREVER_CERT: &str = include_str!("testdata/user-ed25519-forever-cert.pub");

/// `text` as a `Secret`.
pub fn secret(text: &str) -> Secret {
    Secret::from_string(text.to_owned())
}

/// `<algorithm> <base64>` of a public key line.
pub fn bare(line: &str) -> String {
    line.split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}
