//! Cosign's encrypted private key: the body of its `ENCRYPTED SIGSTORE PRIVATE KEY` PEM.
//!
//! The body is a JSON envelope (go-securesystemslib's `encrypted` format, which cosign uses):
//!
//! ```json
//! {"kdf":{"name":"scrypt","params":{"N":32768,"r":8,"p":1},"salt":"<base64, 32 bytes>"},
//!  "cipher":{"name":"nacl/secretbox","nonce":"<base64, 24 bytes>"},"ciphertext":"<base64>"}
//! ```
//!
//! The secretbox key is scrypt(passphrase, salt, N, r, p) of 32 bytes; the ciphertext opens to
//! the PKCS#8 DER of the private key. Fields are written in cosign's order, compact, with
//! standard padded base64, as Go's `encoding/json` writes that struct.

use crypto_secretbox::aead::{Aead as _, KeyInit as _};
use crypto_secretbox::{Key, Nonce, XSalsa20Poly1305};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use super::KeyError;

/// The key derivation cosign writes and the only one it reads.
const KDF: &str = "scrypt";
/// The cipher cosign writes and the only one it reads.
const CIPHER: &str = "nacl/secretbox";
/// log2 of the scrypt cost cosign writes (go-securesystemslib's "legacy" N = 32768).
const WRITE_LOG_N: u8 = 15;
/// The scrypt costs a reader takes: the three parameter sets go-securesystemslib writes. A
/// bound, because N sets the memory and time an opened file costs (N = 2^17 is 128 MiB).
const READ_LOG_N: [u8; 3] = [15, 16, 17];
/// scrypt's block size and parallelism, the same in every parameter set.
const SCRYPT_R: u32 = 8;
const SCRYPT_P: u32 = 1;
const SALT_LEN: usize = 32;
const NONCE_LEN: usize = 24;

/// The JSON envelope; field order is the wire order.
#[derive(Serialize, Deserialize)]
struct Envelope {
    kdf: Kdf,
    cipher: Cipher,
    #[serde(with = "base64_bytes")]
    ciphertext: Vec<u8>,
}

#[derive(Serialize, Deserialize)]
struct Kdf {
    name: String,
    params: ScryptParams,
    #[serde(with = "base64_bytes")]
    salt: Vec<u8>,
}

#[derive(Serialize, Deserialize)]
struct ScryptParams {
    #[serde(rename = "N")]
    n: u64,
    r: u32,
    p: u32,
}

#[derive(Serialize, Deserialize)]
struct Cipher {
    name: String,
    #[serde(with = "base64_bytes")]
    nonce: Vec<u8>,
}

/// Encrypts `plaintext` (a PKCS#8 DER) under `passphrase` as cosign does: fresh random salt and
/// nonce, scrypt N = 32768, r = 8, p = 1. Returns the JSON envelope.
///
/// # Panics
///
/// Never: the envelope always serialises and a private key is far below secretbox's limit.
pub(super) fn seal(plaintext: &[u8], passphrase: &[u8]) -> Result<Vec<u8>, KeyError> {
    let mut salt = vec![0; SALT_LEN];
    let mut nonce = [0; NONCE_LEN];
    getrandom::fill(&mut salt).map_err(KeyError::Random)?;
    getrandom::fill(&mut nonce).map_err(KeyError::Random)?;
    let key = derive_key(passphrase, &salt, WRITE_LOG_N);
    let ciphertext = XSalsa20Poly1305::new(&key)
        .encrypt(&Nonce::from(nonce), plaintext)
        .expect("a private key is far below secretbox's size limit");
    let envelope = Envelope {
        kdf: Kdf {
            name: KDF.to_owned(),
            params: ScryptParams {
                n: 1 << WRITE_LOG_N,
                r: SCRYPT_R,
                p: SCRYPT_P,
            },
            salt,
        },
        cipher: Cipher {
            name: CIPHER.to_owned(),
            nonce: nonce.to_vec(),
        },
        ciphertext,
    };
    Ok(serde_json::to_vec(&envelope).expect("the envelope is plain strings and numbers"))
}

/// Opens the JSON envelope `body` with `passphrase`: the PKCS#8 DER it holds.
pub(super) fn open(body: &[u8], passphrase: &[u8]) -> Result<Zeroizing<Vec<u8>>, KeyError> {
    let envelope: Envelope = serde_json::from_slice(body).map_err(KeyError::Envelope)?;
    if envelope.kdf.name != KDF {
        return Err(unsupported("key derivation", envelope.kdf.name));
    }
    if envelope.cipher.name != CIPHER {
        return Err(unsupported("cipher", envelope.cipher.name));
    }
    let log_n = scrypt_log_n(&envelope.kdf.params)?;
    let nonce = <[u8; NONCE_LEN]>::try_from(envelope.cipher.nonce.as_slice())
        .map_err(|_| unsupported("nonce length", envelope.cipher.nonce.len().to_string()))?;
    let key = derive_key(passphrase, &envelope.kdf.salt, log_n);
    // A wrong passphrase and an altered file fail the same authentication check.
    XSalsa20Poly1305::new(&key)
        .decrypt(&Nonce::from(nonce), envelope.ciphertext.as_slice())
        .map(Zeroizing::new)
        .map_err(|_| KeyError::WrongPassphrase)
}

/// log2 N of parameters cosign could have written, or the refusal naming them.
fn scrypt_log_n(params: &ScryptParams) -> Result<u8, KeyError> {
    let log_n = READ_LOG_N
        .into_iter()
        .find(|log_n| params.n == 1 << log_n)
        .filter(|_| params.r == SCRYPT_R && params.p == SCRYPT_P);
    log_n.ok_or_else(|| {
        let shown = format!("N={}, r={}, p={}", params.n, params.r, params.p);
        unsupported("scrypt parameters", shown)
    })
}

/// The secretbox key: scrypt of the passphrase, 32 bytes.
fn derive_key(passphrase: &[u8], salt: &[u8], log_n: u8) -> Zeroizing<Key> {
    let params = scrypt::Params::new(log_n, SCRYPT_R, SCRYPT_P)
        .expect("the accepted scrypt parameters are valid");
    let mut key = Zeroizing::new(Key::default());
    scrypt::scrypt(passphrase, salt, &params, key.as_mut_slice())
        .expect("a 32-byte output is a valid scrypt length");
    key
}

fn unsupported(what: &'static str, value: String) -> KeyError {
    KeyError::Unsupported { what, value }
}

/// Byte fields as standard padded base64 strings, as Go's `encoding/json` writes `[]byte`.
mod base64_bytes {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize as _, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(deserializer)?;
        STANDARD
            .decode(text)
            .map_err(|error| serde::de::Error::custom(format!("not base64: {error}")))
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;

    use super::*;

    const PASSPHRASE: &[u8] = b"correct horse";

    #[test]
    fn a_sealed_key_opens_with_its_passphrase_only() {
        let body = seal(b"secret der", PASSPHRASE).expect("seals");
        assert_eq!(
            open(&body, PASSPHRASE).expect("opens").as_slice(),
            b"secret der"
        );
        let error = open(&body, b"wrong").expect_err("a wrong passphrase");
        assert!(matches!(error, KeyError::WrongPassphrase), "{error}");
    }

    /// The envelope is cosign's: its fields in Go's order, compact, cosign's parameters, a
    /// fresh salt and nonce every time.
    #[test]
    fn the_envelope_is_written_as_cosign_writes_it() {
        let body = String::from_utf8(seal(b"der", b"").expect("seals")).expect("utf-8");
        let prefix = r#"{"kdf":{"name":"scrypt","params":{"N":32768,"r":8,"p":1},"salt":""#;
        assert!(body.starts_with(prefix), "{body}");
        let json: serde_json::Value = serde_json::from_str(&body).expect("json");
        let salt = STANDARD
            .decode(json["kdf"]["salt"].as_str().expect("salt"))
            .expect("b64");
        let nonce = STANDARD
            .decode(json["cipher"]["nonce"].as_str().expect("nonce"))
            .expect("b64");
        assert_eq!((salt.len(), nonce.len()), (SALT_LEN, NONCE_LEN));
        assert_eq!(json["cipher"]["name"], "nacl/secretbox");
        let keys: Vec<&String> = json.as_object().expect("object").keys().collect();
        assert_eq!(keys.len(), 3, "{keys:?}");
        // secretbox: a 16-byte tag before the encrypted bytes.
        let ciphertext = STANDARD
            .decode(json["ciphertext"].as_str().expect("ct"))
            .expect("b64");
        assert_eq!(ciphertext.len(), 3 + 16);
        let again = String::from_utf8(seal(b"der", b"").expect("seals")).expect("utf-8");
        assert_ne!(body, again, "salt and nonce are random");
    }

    /// An envelope like `body` with `field` (a JSON pointer) replaced by `value`.
    fn with(body: &[u8], pointer: &str, value: serde_json::Value) -> Vec<u8> {
        let mut json: serde_json::Value = serde_json::from_slice(body).expect("json");
        *json.pointer_mut(pointer).expect(pointer) = value;
        serde_json::to_vec(&json).expect("encodes")
    }

    /// Every envelope `open` refuses, and what the refusal names.
    #[test]
    fn refusals_name_what_is_wrong() {
        let body = seal(b"der", PASSPHRASE).expect("seals");
        let flipped = {
            let json: serde_json::Value = serde_json::from_slice(&body).expect("json");
            let mut ciphertext = STANDARD
                .decode(json["ciphertext"].as_str().expect("ct"))
                .expect("b64");
            ciphertext[10] ^= 1;
            serde_json::Value::from(STANDARD.encode(ciphertext))
        };
        let cases: [(Vec<u8>, &str); 11] = [
            (b"not json".to_vec(), "not cosign's JSON envelope"),
            (b"{}".to_vec(), "missing field `kdf`"),
            (
                with(&body, "/kdf/name", "pbkdf2".into()),
                "unsupported key derivation `pbkdf2`",
            ),
            (
                with(&body, "/cipher/name", "aes-gcm".into()),
                "unsupported cipher `aes-gcm`",
            ),
            (
                with(&body, "/kdf/params/N", 1_048_576.into()),
                "unsupported scrypt parameters `N=1048576, r=8, p=1`",
            ),
            (
                with(&body, "/kdf/params/N", 1000.into()),
                "`N=1000, r=8, p=1`",
            ),
            (
                with(&body, "/kdf/params/r", 1.into()),
                "`N=32768, r=1, p=1`",
            ),
            (
                with(&body, "/kdf/params/p", 4.into()),
                "`N=32768, r=8, p=4`",
            ),
            (
                with(&body, "/cipher/nonce", "AAAA".into()),
                "unsupported nonce length `3`",
            ),
            (with(&body, "/kdf/salt", "!!".into()), "not base64"),
            (with(&body, "/ciphertext", flipped), "passphrase"),
        ];
        for (body, expected) in cases {
            let error = open(&body, PASSPHRASE).expect_err(expected).to_string();
            assert!(
                error.contains(expected),
                "expected {expected:?} in: {error}"
            );
        }
    }

    /// The N values go-securesystemslib writes all open; each costs its own scrypt.
    #[test]
    fn every_cosign_scrypt_cost_is_read() {
        for log_n in READ_LOG_N {
            let params = ScryptParams {
                n: 1 << log_n,
                r: 8,
                p: 1,
            };
            assert_eq!(scrypt_log_n(&params).expect("accepted"), log_n);
        }
    }
}
