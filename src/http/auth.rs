//! Bearer-key authentication: each key maps to one namespace (and may be admin).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::error::AppError;

/// Namespace used when no keys are configured.
pub const DEFAULT_NAMESPACE: &str = "default";

/// Who is calling: the namespace every memory of the request belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The caller's namespace.
    pub namespace: String,
    /// Whether the key may call admin endpoints.
    pub admin: bool,
}

/// The configured keys (stored as SHA-256 digests), or none for open access.
#[derive(Clone, Default)]
pub struct Auth {
    keys: Option<HashMap<[u8; 32], Caller>>,
    /// No keys and a loopback address: refuse requests from web pages.
    loopback_only: bool,
}

impl Auth {
    /// Parses `key:namespace[:admin],...`; an empty spec means no authentication.
    pub fn parse(spec: Option<&str>) -> Result<Self, String> {
        let Some(spec) = spec.map(str::trim).filter(|s| !s.is_empty()) else {
            return Ok(Self::default());
        };
        let mut keys = HashMap::new();
        for (n, entry) in spec
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .enumerate()
        {
            let parts: Vec<&str> = entry.split(':').collect();
            let (key, namespace, admin) = match parts.as_slice() {
                [key, ns] => (*key, *ns, false),
                [key, ns, "admin"] => (*key, *ns, true),
                _ => {
                    return Err(format!(
                        "API key entry {} must be key:namespace or key:namespace:admin",
                        n + 1
                    ));
                }
            };
            if key.len() < 8 {
                return Err(format!(
                    "API key entry {} is shorter than 8 characters",
                    n + 1
                ));
            }
            let ns_ok = !namespace.is_empty()
                && namespace.len() <= 64
                && namespace
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
            if !ns_ok {
                return Err(format!(
                    "API key entry {}: namespace `{namespace}` must be 1-64 of A-Z a-z 0-9 - _ .",
                    n + 1
                ));
            }
            let caller = Caller {
                namespace: namespace.to_owned(),
                admin,
            };
            if keys.insert(digest(key), caller).is_some() {
                return Err(format!("API key entry {} repeats a key", n + 1));
            }
        }
        Ok(Self {
            keys: Some(keys),
            loopback_only: false,
        })
    }

    /// Marks an open (keyless) server bound to loopback, which then refuses
    /// requests carrying a foreign `Origin` or `Host`.
    pub fn guard_loopback(mut self, listen_is_loopback: bool) -> Self {
        self.loopback_only = self.keys.is_none() && listen_is_loopback;
        self
    }

    /// Whether keys are required.
    pub fn enabled(&self) -> bool {
        self.keys.is_some()
    }

    /// The caller a request's `Authorization` header names.
    pub fn authenticate(&self, header: Option<&str>) -> Result<Caller, AppError> {
        let Some(keys) = &self.keys else {
            return Ok(Caller {
                namespace: DEFAULT_NAMESPACE.to_owned(),
                admin: true,
            });
        };
        let token = header
            .and_then(|h| {
                h.strip_prefix("Bearer ")
                    .or_else(|| h.strip_prefix("bearer "))
            })
            .map(str::trim)
            .ok_or_else(|| {
                AppError::new(
                    StatusCode::UNAUTHORIZED,
                    "unauthorized",
                    "missing `Authorization: Bearer <key>` header",
                )
            })?;
        keys.get(&digest(token)).cloned().ok_or_else(|| {
            AppError::new(StatusCode::UNAUTHORIZED, "unauthorized", "unknown API key")
        })
    }
}

impl Auth {
    /// The caller of a raw key (as sent in `X-Cairn-Key` or a provider's key header).
    pub fn key_caller(&self, key: &str) -> Result<Caller, AppError> {
        self.authenticate(Some(&format!("Bearer {}", key.trim())))
    }

    /// The refusal of a keyless loopback server for a request only a web page
    /// would make (foreign `Origin` or `Host`), if this is one.
    pub fn refuse_browser(&self, headers: &axum::http::HeaderMap) -> Option<AppError> {
        if self.loopback_only {
            refuse_browser_request(headers)
        } else {
            None
        }
    }
}

fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// Whether a `Host` or `Origin` value names this machine's loopback.
fn is_loopback_host(value: &str) -> bool {
    let host = value.split("://").last().unwrap_or(value);
    let host = host.split('/').next().unwrap_or(host);
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or(rest)
    } else {
        host.rsplit_once(':').map_or(host, |(name, _)| name)
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Without keys the API is open to whatever can reach it, so requests that
/// only a web page would make are refused: a foreign `Origin` (another site
/// driving the user's browser) and a foreign `Host` (DNS rebinding).
fn refuse_browser_request(headers: &axum::http::HeaderMap) -> Option<AppError> {
    let header = |name| headers.get(name).and_then(|v| v.to_str().ok());
    let foreign = |value: Option<&str>| value.is_some_and(|v| !is_loopback_host(v));
    if foreign(header(axum::http::header::ORIGIN)) || foreign(header(axum::http::header::HOST)) {
        return Some(AppError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "without API keys only clients on this machine may call the API directly; configure CAIRN_API_KEYS",
        ));
    }
    None
}

/// Middleware: authenticates and puts the [`Caller`] into the request.
pub async fn require_caller(
    State(auth): State<Arc<Auth>>,
    mut request: Request,
    next: Next,
) -> Response {
    if auth.loopback_only
        && let Some(refusal) = refuse_browser_request(request.headers())
    {
        return refusal.into_response();
    }
    let header = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match auth.authenticate(header) {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(err) => {
            let mut response = err.into_response();
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
            response
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts.extensions.get::<Caller>().cloned().ok_or_else(|| {
            AppError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "no caller on this route",
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_to_namespaces() {
        let auth = Auth::parse(Some("k-alpha-123:alpha, k-beta-4567:beta:admin")).unwrap();
        assert_eq!(
            auth.authenticate(Some("Bearer k-alpha-123"))
                .unwrap()
                .namespace,
            "alpha"
        );
        assert!(auth.authenticate(Some("Bearer k-beta-4567")).unwrap().admin);
        assert!(auth.authenticate(Some("Bearer nope-nope")).is_err());
        assert!(auth.authenticate(None).is_err());
    }

    #[test]
    fn loopback_hosts_are_told_apart() {
        for host in [
            "localhost:8077",
            "127.0.0.1:8077",
            "127.0.0.1",
            "[::1]:8077",
            "http://localhost:3000",
            "LOCALHOST",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "evil.example:8077",
            "10.0.0.1",
            "http://evil.example",
            "localhost.evil.example",
            "null",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn malformed_specs_are_refused() {
        assert!(Auth::parse(Some("short:ns")).is_err());
        assert!(Auth::parse(Some("long-enough-key")).is_err());
        assert!(Auth::parse(Some("long-enough-key:bad ns")).is_err());
        assert!(Auth::parse(Some("long-enough-key:a,long-enough-key:b")).is_err());
        assert!(!Auth::parse(None).unwrap().enabled());
    }
}
