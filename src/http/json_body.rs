//! [`LimitedJson`]: a JSON request body of at most `max_json_bytes`, whose
//! every rejection is our JSON error (the router disables axum's body limit).

use axum::extract::{FromRequest, Request};
use axum::http::{StatusCode, header};
use http_body_util::BodyExt;
use serde::de::DeserializeOwned;

use super::error::AppError;
use super::state::AppState;

/// A JSON body (`Content-Type: application/json`) read up to the configured limit.
pub struct LimitedJson<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for LimitedJson<T> {
    type Rejection = AppError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, AppError> {
        let json = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| {
                let v = v.trim().to_ascii_lowercase();
                v == "application/json" || (v.starts_with("application/") && v.ends_with("+json"))
            });
        if !json {
            return Err(AppError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "invalid_json",
                "expected a JSON body with `Content-Type: application/json`",
            ));
        }
        let limit = state.config.max_json_bytes;
        let bytes = http_body_util::Limited::new(request.into_body(), limit)
            .collect()
            .await
            .map_err(|e| {
                if e.downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some()
                {
                    AppError::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "payload_too_large",
                        format!("JSON bodies are limited to {limit} bytes"),
                    )
                    .with("limit", limit)
                } else {
                    AppError::new(
                        StatusCode::BAD_REQUEST,
                        "bad_body",
                        format!("could not read the request body: {e}"),
                    )
                }
            })?
            .to_bytes();
        parse(&bytes).map(Self).map_err(|e| {
            let status = if e.is_data() {
                StatusCode::UNPROCESSABLE_ENTITY
            } else {
                StatusCode::BAD_REQUEST
            };
            AppError::new(status, "invalid_json", format!("invalid JSON body: {e}"))
        })
    }
}

/// Reads `bytes`, a JSON object, as `T`. A number written with a zero fraction (`2.0`) where
/// an integer is expected is read as the integer it equals: JSON Schema, and
/// so the OpenAPI document, counts it as one. The retry costs nothing unless
/// the first reading failed on a float.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, serde_json::Error> {
    // Every JSON body of this API is an object; serde would also read a
    // struct from an array of its fields in order (other values it refuses).
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        let array = serde::de::Unexpected::Seq;
        return Err(serde::de::Error::invalid_type(array, &"a JSON object"));
    }
    match serde_json::from_slice(bytes) {
        Err(e) if e.is_data() && e.to_string().contains("invalid type: floating point") => {
            let mut value: serde_json::Value = serde_json::from_slice(bytes)?;
            if !integral_floats_to_integers(&mut value) {
                return Err(e);
            }
            serde_json::from_value(value).map_err(|_| e)
        }
        read => read,
    }
}

/// Turns every float with a zero fraction that an integer type holds into
/// that integer; answers whether it changed any.
fn integral_floats_to_integers(value: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match value {
        Value::Number(n) if n.is_f64() => {
            let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15) else {
                return false;
            };
            // Within ±2^53 every such float is an integer exactly.
            #[allow(clippy::cast_possible_truncation)]
            let i = f as i64;
            *value = Value::from(i);
            true
        }
        Value::Array(items) => {
            let mut changed = false;
            for item in items {
                changed |= integral_floats_to_integers(item);
            }
            changed
        }
        Value::Object(map) => {
            let mut changed = false;
            for item in map.values_mut() {
                changed |= integral_floats_to_integers(item);
            }
            changed
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Body {
        n: u64,
        m: Option<usize>,
        f: f64,
    }

    #[test]
    fn an_integral_float_reads_as_an_integer_and_a_fraction_does_not() {
        let body: Body = parse(br#"{"n": 2.0, "m": 30.0, "f": 1.5}"#).unwrap();
        assert_eq!(
            body,
            Body {
                n: 2,
                m: Some(30),
                f: 1.5
            }
        );
        let err = parse::<Body>(br#"{"n": 2.5, "f": 1}"#).unwrap_err();
        assert!(err.to_string().contains("floating point `2.5`"), "{err}");
        assert!(parse::<Body>(br#"{"n": -1.0, "f": 1}"#).is_err());
        // A struct is an object here, never the array of its fields.
        let err = parse::<Body>(b" [2, 30, 1.5]").unwrap_err();
        assert!(
            err.is_data() && err.to_string().contains("a JSON object"),
            "{err}"
        );
    }
}
