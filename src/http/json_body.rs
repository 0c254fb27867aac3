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
        serde_json::from_slice(&bytes).map(Self).map_err(|e| {
            let status = if e.is_data() {
                StatusCode::UNPROCESSABLE_ENTITY
            } else {
                StatusCode::BAD_REQUEST
            };
            AppError::new(status, "invalid_json", format!("invalid JSON body: {e}"))
        })
    }
}
