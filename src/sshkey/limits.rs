//! The sizes and costs a key may have: what import, generation and `ssh-add` accept, and
//! what the refusals in `error` quote.

/// The most bcrypt-pbkdf rounds an imported key may ask for before we try its passphrase.
/// The rounds come from the key file, i.e. from the request: without a cap a crafted key
/// with 2^32 rounds would keep a worker busy for days. ssh-keygen's default is 16 (~120 ms
/// here) and guides suggest `-a 100`; 1024 rounds cost about 8 s.
pub const MAX_BCRYPT_ROUNDS: u32 = 1024;

/// docs/api.md "Keys": an imported RSA key has at least this many bits, as a generated one.
/// OpenSSH still reads 1,024-bit keys, which are within reach of factoring.
pub const MIN_RSA_BITS: usize = 2048;

/// docs/api.md "Keys": the longest private key text an import takes, in bytes. The largest key
/// the service accepts, a 16,384-bit RSA key with a passphrase, is about 13 KB; anything
/// longer is refused before it is parsed.
pub const MAX_PRIVATE_KEY_BYTES: usize = 64 * 1024;

/// The largest RSA key the agent takes from `ssh-add`, as OpenSSH's own limit: the numbers
/// of a bigger one would cost seconds of arithmetic in `rsa_checks`. Import and generation
/// keep to it too.
pub const MAX_RSA_BITS: usize = 16384;
