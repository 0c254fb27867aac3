//! Whole numbers as the OpenAPI document states them: a Rust `u64` is
//! written there as `integer` of format `int64`, so the server holds it to
//! that range (0 to 2^63 - 1) instead of taking what only a `u64` holds.
//! `#[serde(deserialize_with = "crate::model::int64::option")]` on a field.

use serde::{Deserialize, Deserializer};

/// An optional `u64` of at most `i64::MAX`.
pub fn option<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    let value = Option::<u64>::deserialize(deserializer)?;
    match value {
        Some(n) if i64::try_from(n).is_err() => Err(serde::de::Error::custom(format!(
            "{n} is larger than the largest int64 ({})",
            i64::MAX
        ))),
        value => Ok(value),
    }
}

/// A `u64` of at most `i64::MAX`.
pub fn required<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    let n = u64::deserialize(deserializer)?;
    if i64::try_from(n).is_err() {
        return Err(serde::de::Error::custom(format!(
            "{n} is larger than the largest int64 ({})",
            i64::MAX
        )));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    #[derive(serde::Deserialize)]
    struct Both {
        #[serde(default, deserialize_with = "super::option")]
        a: Option<u64>,
        #[serde(default, deserialize_with = "super::required")]
        b: u64,
    }

    #[test]
    fn the_int64_range_is_read_and_beyond_it_is_refused() {
        let ok: Both = serde_json::from_str(r#"{"a": 9223372036854775807, "b": 0}"#).unwrap();
        assert_eq!(ok.a, Some(i64::MAX as u64));
        let none: Both = serde_json::from_str("{}").unwrap();
        assert_eq!((none.a, none.b), (None, 0));
        for body in [
            r#"{"a": 9223372036854775808}"#,
            r#"{"b": 18446744073709551615}"#,
        ] {
            let err = serde_json::from_str::<Both>(body).err().unwrap();
            assert!(err.to_string().contains("largest int64"), "{err}");
        }
    }
}
