//! Standard Webhooks signatures (<https://www.standardwebhooks.com>): HMAC-SHA256 of
//! `{webhook-id}.{webhook-timestamp}.{body}` under the subscription's secret, sent as
//! `webhook-signature: v1,<base64>`. A secret is `whsec_` and the base64 of its key bytes.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// What a secret starts with.
const PREFIX: &str = "whsec_";

/// A fresh secret: 32 random bytes.
pub fn new_secret() -> Result<String, getrandom::Error> {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key)?;
    Ok(format!("{PREFIX}{}", STANDARD.encode(key)))
}

/// The key bytes of a secret (`whsec_` and base64); `None` if it is not one.
pub fn key_of(secret: &str) -> Option<Vec<u8>> {
    let key = STANDARD.decode(secret.strip_prefix(PREFIX)?).ok()?;
    (!key.is_empty()).then_some(key)
}

/// The `webhook-signature` header's value for a message.
pub fn signature(key: &[u8], id: &str, timestamp: u64, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body.as_bytes());
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the Standard Webhooks specification.
    #[test]
    fn signs_the_specification_example() {
        let key = key_of("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let body = r#"{"test": 2432232314}"#;
        assert_eq!(
            signature(&key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn a_fresh_secret_is_a_secret() {
        let secret = new_secret().unwrap();
        assert_eq!(key_of(&secret).map(|k| k.len()), Some(32));
        assert_ne!(secret, new_secret().unwrap());
        assert_eq!(key_of("whsec_"), None);
        assert_eq!(key_of("secret"), None);
    }
}
