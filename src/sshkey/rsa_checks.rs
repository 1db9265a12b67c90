//! The RSA checks: the size of the public key, and that the private numbers belong to it.

use rsa::BigUint;
use ssh_key::{PrivateKey, PublicKey};
use zeroize::Zeroizing;

use crate::sshkey::error::ImportError;
use crate::sshkey::limits::{MAX_RSA_BITS, MIN_RSA_BITS};

/// Refuses an RSA public key of fewer than `MIN_RSA_BITS` or more than `MAX_RSA_BITS`
/// bits (other keys pass).
pub(super) fn check_rsa_size(public_key: &PublicKey) -> Result<(), ImportError> {
    let Some(rsa) = public_key.key_data().rsa() else {
        return Ok(());
    };
    let bits = rsa
        .n
        .as_positive_bytes()
        .and_then(|n| {
            let first = *n.first()?;
            Some(n.len() * 8 - first.leading_zeros() as usize)
        })
        .unwrap_or(0);
    match bits {
        bits if bits < MIN_RSA_BITS => Err(ImportError::RsaTooSmall(bits)),
        bits if bits > MAX_RSA_BITS => Err(ImportError::RsaTooLarge(bits)),
        _ => Ok(()),
    }
}

/// Refuses an RSA key whose numbers are not an RSA key: e odd and at least 3 (with e = 1
/// every "signature" is the message itself), p and q odd and above 1 (so q = p + 1 cannot
/// pass), n = p*q, e*d = 1 modulo lambda(n) = lcm(p-1, q-1) (so d inverts e), and iqmp*q = 1
/// modulo p (the CRT coefficient). Built from the key's own numbers: ssh-key 0.6.7's
/// conversion to an `rsa` key passes p twice. Other keys pass. Primality is not tested.
pub(super) fn check_rsa_numbers(key: &PrivateKey) -> Result<(), ImportError> {
    let Some(rsa) = key.key_data().rsa() else {
        return Ok(());
    };
    let number = |mpint: &ssh_key::Mpint| {
        mpint
            .as_positive_bytes()
            .map(|bytes| Zeroizing::new(BigUint::from_bytes_be(bytes)))
            .ok_or(ImportError::RsaMismatch)
    };
    let (n, e) = (number(&rsa.public.n)?, number(&rsa.public.e)?);
    let (d, p, q) = (
        number(&rsa.private.d)?,
        number(&rsa.private.p)?,
        number(&rsa.private.q)?,
    );
    let iqmp = number(&rsa.private.iqmp)?;
    let (one, two) = (BigUint::from(1u8), BigUint::from(2u8));
    let odd_above = |number: &BigUint, floor: &BigUint| {
        *number >= *floor && *Zeroizing::new(number % &two) == one
    };
    // Odd primes above 1 also keep the divisions below away from zero.
    let three = BigUint::from(3u8);
    if !odd_above(&e, &three) || !odd_above(&p, &three) || !odd_above(&q, &three) {
        return Err(ImportError::RsaMismatch);
    }
    let product = Zeroizing::new(&*p * &*q);
    let (p1, q1) = (Zeroizing::new(&*p - &one), Zeroizing::new(&*q - &one));
    let lambda = Zeroizing::new(&*p1 * &*q1 / &*gcd(&p1, &q1));
    let inverts_e = *Zeroizing::new(&*e * &*d % &*lambda) == one;
    let crt = Zeroizing::new(&*iqmp * &*q % &*p);
    match *product == *n && inverts_e && *crt == one {
        true => Ok(()),
        false => Err(ImportError::RsaMismatch),
    }
}

/// The greatest common divisor (Euclid), wiped on drop like the numbers it comes from.
fn gcd(a: &BigUint, b: &BigUint) -> Zeroizing<BigUint> {
    let zero = BigUint::from(0u8);
    let (mut a, mut b) = (Zeroizing::new(a.clone()), Zeroizing::new(b.clone()));
    while *b != zero {
        let rest = Zeroizing::new(&*a % &*b);
        a = b;
        b = rest;
    }
    a
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use ssh_key::private::{KeypairData, RsaKeypair};
    use ssh_key::{LineEnding, Mpint, PrivateKey, PublicKey};

    use crate::sshkey::error::ImportError;
    use crate::sshkey::fixtures::{
        bare, secret, RSA_1024_SECRET, RSA_2047_PUBLIC, RSA_2048, RSA_2048_PUBLIC,
    };
    use crate::sshkey::generate::VaultRng;
    use crate::sshkey::limits::MAX_RSA_BITS;
    use crate::sshkey::parse::{import, read};
    use crate::sshkey::rsa_checks::check_rsa_size;

    /// `text` (an unencrypted OpenSSH RSA key) with its private numbers changed by `change`.
    fn rsa_with(text: &str, change: impl FnOnce(&mut RsaKeypair)) -> String {
        let key = PrivateKey::from_openssh(text).unwrap();
        let mut keypair = key.key_data().rsa().unwrap().clone();
        change(&mut keypair);
        PrivateKey::new(KeypairData::from(keypair), "c")
            .unwrap()
            .to_openssh(LineEnding::LF)
            .unwrap()
            .to_string()
    }

    /// A change to an RSA key's private numbers.
    type Change = fn(&mut RsaKeypair);

    /// `mpint` with its lowest bit flipped: another number of the same length.
    fn flip_low_bit(mpint: &Mpint) -> Mpint {
        let mut bytes = mpint.as_positive_bytes().unwrap().to_vec();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        Mpint::from_positive_bytes(&bytes).unwrap()
    }

    #[test]
    fn rsa_public_key_of_2047_bits_is_too_small_and_2048_bits_is_enough() {
        let size = |line: &str| check_rsa_size(&PublicKey::from_openssh(line.trim()).unwrap());
        assert_eq!(size(RSA_2047_PUBLIC), Err(ImportError::RsaTooSmall(2047)));
        assert_eq!(size(RSA_2048_PUBLIC), Ok(()));
        assert_eq!(
            import(&secret(RSA_2048), None).unwrap().info.public_key,
            bare(RSA_2048_PUBLIC)
        );
    }

    #[test]
    fn encrypted_rsa_key_of_1024_bits_is_refused_before_any_passphrase() {
        assert_eq!(
            read(&secret(RSA_1024_SECRET)).err(),
            Some(ImportError::RsaTooSmall(1024)),
            "the size is public: refused before any passphrase"
        );
    }

    #[test]
    fn rsa_key_whose_private_numbers_do_not_fit_is_refused_and_an_intact_one_is_read() {
        let text = RSA_2048;
        let intact = import(&secret(&rsa_with(text, |_| {})), None).unwrap();
        assert_eq!(intact.info.key_type, "ssh-rsa");
        let changes: [(&str, Change); 4] = [
            ("d", |key| key.private.d = flip_low_bit(&key.private.d)),
            ("p", |key| key.private.p = flip_low_bit(&key.private.p)),
            ("iqmp", |key| {
                key.private.iqmp = flip_low_bit(&key.private.iqmp)
            }),
            ("p and q swapped", |key| {
                std::mem::swap(&mut key.private.p, &mut key.private.q)
            }),
        ];
        for (what, change) in changes {
            let broken = rsa_with(text, change);
            assert_eq!(
                import(&secret(&broken), None).unwrap_err(),
                ImportError::RsaMismatch,
                "{what}"
            );
            let encrypted = PrivateKey::from_openssh(&broken)
                .unwrap()
                .encrypt(&mut VaultRng, "pass")
                .unwrap()
                .to_openssh(LineEnding::LF)
                .unwrap()
                .to_string();
            assert_eq!(
                import(&secret(&encrypted), Some(&secret("pass"))).unwrap_err(),
                ImportError::RsaMismatch,
                "{what}, checked once decrypted"
            );
            assert!(
                import(&secret(&encrypted), None).unwrap().encrypted,
                "{what}: without the passphrase the private numbers cannot be seen"
            );
        }
    }

    #[test]
    fn rsa_key_with_a_prime_of_one_is_refused_without_dividing_by_zero() {
        let broken = rsa_with(RSA_2048, |key| {
            key.private.p = Mpint::from_positive_bytes(&[1]).unwrap();
        });
        assert_eq!(
            import(&secret(&broken), None).unwrap_err(),
            ImportError::RsaMismatch
        );
    }

    /// A positive mpint of the big-endian number `bytes`.
    fn mpint(bytes: &[u8]) -> Mpint {
        Mpint::from_positive_bytes(bytes).unwrap()
    }

    #[test]
    fn rsa_key_with_e_and_d_of_one_and_q_of_p_plus_one_is_refused() {
        // p = 2^1100 + 1 (odd), q = p + 1, n = p*q, e = d = iqmp = 1: n = p*q, e*d = 1
        // modulo p-1 and q-1, and iqmp*q = 1 modulo p all hold.
        let mut p = vec![0u8; 138];
        p[0] = 0x10;
        p[137] = 1;
        let p_num = rsa::BigUint::from_bytes_be(&p);
        let q_num = &p_num + 1u8;
        let n_num = &p_num * &q_num;
        let broken = rsa_with(RSA_2048, |key| {
            key.public.e = mpint(&[1]);
            key.public.n = mpint(&n_num.to_bytes_be());
            key.private.d = mpint(&[1]);
            key.private.iqmp = mpint(&[1]);
            key.private.p = mpint(&p_num.to_bytes_be());
            key.private.q = mpint(&q_num.to_bytes_be());
        });
        assert_eq!(read(&secret(&broken)).err(), Some(ImportError::RsaMismatch));
    }

    #[test]
    fn rsa_key_with_e_of_one_or_even_is_refused_even_when_its_primes_are_real() {
        // The real primes of the key, with e = d = 1 (every "signature" is the message).
        let one = rsa_with(RSA_2048, |key| {
            key.public.e = mpint(&[1]);
            key.private.d = mpint(&[1]);
        });
        assert_eq!(read(&secret(&one)).err(), Some(ImportError::RsaMismatch));
        let even = rsa_with(RSA_2048, |key| key.public.e = mpint(&[1, 0, 0]));
        assert_eq!(read(&secret(&even)).err(), Some(ImportError::RsaMismatch));
    }

    #[test]
    fn rsa_public_key_of_16384_bits_is_accepted_and_16385_bits_is_too_large() {
        let of_bits = |bits: usize| {
            let mut n = vec![0xffu8; bits.div_ceil(8)];
            n[0] = 0xff >> (n.len() * 8 - bits);
            let public = ssh_key::public::RsaPublicKey {
                e: mpint(&[1, 0, 1]),
                n: mpint(&n),
            };
            check_rsa_size(&PublicKey::from(ssh_key::public::KeyData::Rsa(public)))
        };
        assert_eq!(of_bits(MAX_RSA_BITS), Ok(()));
        assert_eq!(
            of_bits(MAX_RSA_BITS + 1),
            Err(ImportError::RsaTooLarge(MAX_RSA_BITS + 1))
        );
    }
}
