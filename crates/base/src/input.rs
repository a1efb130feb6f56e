//! What every face reads from outside the same way: plain names (session ids, tenants, model
//! names) and whole numbers.

use serde::de::{Deserialize, Deserializer, Error as _};

/// Whether `name` is 1 to `max` ASCII letters, digits and `punctuation`, starting with a letter
/// or digit: nothing a path, a log line or a terminal would read as more.
pub fn plain_name(name: &str, max: usize, punctuation: &[char]) -> bool {
    let fits = |c: char| c.is_ascii_alphanumeric() || punctuation.contains(&c);
    name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.len() <= max
        && name.chars().all(fits)
}

/// `deserialize_with` for an optional whole number: JSON Schema's `integer` is any number with
/// no fraction, so `300.0` counts as `300`.
pub fn whole<'de, D: Deserializer<'de>, N: TryFrom<u64>>(
    deserializer: D,
) -> Result<Option<N>, D::Error> {
    let Some(number) = Option::<serde_json::Number>::deserialize(deserializer)? else {
        return Ok(None);
    };
    let whole = match (number.as_u64(), number.as_f64()) {
        (Some(n), _) => Some(n),
        (None, Some(f)) if f.fract() == 0.0 && (0.0..=u64::MAX as f64).contains(&f) => {
            Some(f as u64)
        }
        _ => None,
    };
    whole
        .and_then(|n| N::try_from(n).ok())
        .map(Some)
        .ok_or_else(|| D::Error::custom(format_args!("{number} is not a whole number in range")))
}
