//! Who is looking: an API key exchanged once for an `HttpOnly`,
//! `SameSite=Strict` session cookie (the key is never put in a URL nor kept
//! in the browser), and the [`Viewer`] every page is rendered for — its
//! namespace (an admin key may look at another with `?ns=`) and the CSRF
//! token its forms carry.

use std::sync::Arc;
use std::time::Duration;

use axum::Form;
use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use moka::sync::Cache;
use serde::Deserialize;

use super::layout;
use super::viewer::Viewer;
use crate::http::auth::Caller;
use crate::http::state::AppState;

/// The session cookie's name.
const COOKIE: &str = "cairn_console";

/// Sessions held at once (the oldest go first).
const MAX_SESSIONS: u64 = 10_000;

/// A session ends after this long unused.
const IDLE: Duration = Duration::from_secs(12 * 60 * 60);

/// One signed-in browser.
#[derive(Clone)]
struct Signed {
    caller: Caller,
    csrf: String,
}

/// The console's sessions, by the digest of their cookie.
#[derive(Clone)]
pub struct Sessions {
    signed: Cache<[u8; 32], Arc<Signed>>,
    /// The CSRF token of a server without keys (every viewer is the same).
    open_csrf: String,
}

impl Sessions {
    /// No one signed in.
    pub fn new() -> Self {
        Self {
            signed: Cache::builder()
                .max_capacity(MAX_SESSIONS)
                .time_to_idle(IDLE)
                .build(),
            open_csrf: random_token(),
        }
    }

    fn sign_in(&self, caller: Caller) -> String {
        let token = random_token();
        self.signed.insert(
            digest(&token),
            Arc::new(Signed {
                caller,
                csrf: random_token(),
            }),
        );
        token
    }

    fn find(&self, token: &str) -> Option<Arc<Signed>> {
        self.signed.get(&digest(token))
    }

    fn sign_out(&self, token: &str) {
        self.signed.invalidate(&digest(token));
    }
}

impl Default for Sessions {
    fn default() -> Self {
        Self::new()
    }
}

fn digest(token: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes()).into()
}

/// 32 random bytes, hex (all zeros only if the OS has no randomness, in
/// which case nothing else of the server works either).
fn random_token() -> String {
    let mut bytes = [0u8; 32];
    if getrandom::fill(&mut bytes).is_err() {
        tracing::error!("no randomness for a console session token");
    }
    hex::encode(bytes)
}

impl Viewer {
    /// The refusal of a form post whose CSRF token is not this session's.
    pub fn refuse_csrf(&self, given: &str) -> Option<Response> {
        let valid = !given.is_empty() && given.len() == self.csrf.len() && given == self.csrf;
        (!valid).then(|| {
            layout::failure(
                Some(self),
                StatusCode::FORBIDDEN,
                "This form has expired: reload the page and try again.",
            )
        })
    }
}

#[derive(Deserialize)]
struct NamespaceParam {
    ns: Option<String>,
}

impl FromRequestParts<AppState> for Viewer {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let sessions = parts
            .extensions
            .get::<Sessions>()
            .cloned()
            .unwrap_or_default();
        let (caller, csrf, signed_in) = if state.auth.enabled() {
            let found = cookie(&parts.headers).and_then(|token| sessions.find(&token));
            let Some(signed) = found else {
                return Err(Redirect::to("/ui/login").into_response());
            };
            (signed.caller.clone(), signed.csrf.clone(), true)
        } else {
            if let Some(refusal) = state.auth.refuse_browser(&parts.headers) {
                return Err(layout::failure(None, refusal.status(), refusal.message()));
            }
            let caller = state
                .auth
                .authenticate(None)
                .map_err(|e| layout::failure(None, e.status(), e.message()))?;
            (caller, sessions.open_csrf.clone(), false)
        };
        let asked = Query::<NamespaceParam>::try_from_uri(&parts.uri)
            .ok()
            .and_then(|q| q.0.ns)
            .filter(|ns| !ns.is_empty());
        let namespace = match asked {
            Some(ns) if ns != caller.namespace => {
                if !caller.admin {
                    return Err(layout::failure(
                        None,
                        StatusCode::FORBIDDEN,
                        "Only an admin key may look at another namespace.",
                    ));
                }
                if !valid_namespace(&ns) {
                    return Err(layout::failure(
                        None,
                        StatusCode::BAD_REQUEST,
                        "A namespace is 1-64 of A-Z a-z 0-9 - _ .",
                    ));
                }
                ns
            }
            _ => caller.namespace.clone(),
        };
        Ok(Viewer {
            caller,
            namespace,
            csrf,
            signed_in,
        })
    }
}

fn valid_namespace(ns: &str) -> bool {
    !ns.is_empty()
        && ns.len() <= 64
        && ns
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// The session token of a request's cookie, if any.
fn cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_owned())
}

/// `GET /ui/login`: the key form (straight to the sessions when the server
/// has no keys).
pub async fn form(axum::extract::State(state): axum::extract::State<AppState>) -> Response {
    if !state.auth.enabled() {
        return Redirect::to("/ui/").into_response();
    }
    login_page(StatusCode::OK, None)
}

fn login_page(status: StatusCode, problem: Option<&str>) -> Response {
    let body: Markup = html! {
        form.login method="post" action="/ui/login" {
            @if let Some(problem) = problem {
                p.error role="alert" { (problem) }
            }
            label for="key" { "API key" }
            input #key type="password" name="key" autocomplete="current-password" required;
            p.hint { "The key is exchanged for a session cookie; it is not kept in the browser." }
            button type="submit" { "Sign in" }
        }
    };
    layout::bare(status, "Sign in", body)
}

/// The login form's field.
#[derive(Deserialize)]
pub struct LoginForm {
    key: String,
}

/// `POST /ui/login`: a valid key becomes a session cookie.
pub async fn submit(
    axum::extract::State(state): axum::extract::State<AppState>,
    axum::Extension(sessions): axum::Extension<Sessions>,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Response {
    if !state.auth.enabled() {
        return Redirect::to("/ui/").into_response();
    }
    let Ok(caller) = state.auth.key_caller(&form.key) else {
        return login_page(StatusCode::UNAUTHORIZED, Some("That key is not known."));
    };
    let token = sessions.sign_in(caller);
    let secure = forwarded_https(&headers);
    let cookie = format!(
        "{COOKIE}={token}; Path=/ui; HttpOnly; SameSite=Strict{}",
        if secure { "; Secure" } else { "" }
    );
    let mut response = Redirect::to("/ui/").into_response();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// The sign-out form's field.
#[derive(Deserialize)]
pub struct CsrfForm {
    /// The session's CSRF token.
    #[serde(default)]
    pub csrf: String,
}

/// `POST /ui/logout`: ends the session.
pub async fn logout(
    viewer: Viewer,
    axum::Extension(sessions): axum::Extension<Sessions>,
    headers: HeaderMap,
    Form(form): Form<CsrfForm>,
) -> Response {
    if let Some(refused) = viewer.refuse_csrf(&form.csrf) {
        return refused;
    }
    if let Some(token) = cookie(&headers) {
        sessions.sign_out(&token);
    }
    let mut response = Redirect::to("/ui/login").into_response();
    let expired = format!("{COOKIE}=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0");
    if let Ok(value) = HeaderValue::from_str(&expired) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// True when a proxy in front says the browser came over HTTPS.
fn forwarded_https(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; cairn_console=abc; b=2"),
        );
        assert_eq!(cookie(&headers).as_deref(), Some("abc"));
        headers.insert(header::COOKIE, HeaderValue::from_static("cairn_consolex=1"));
        assert_eq!(cookie(&headers), None);
    }

    #[test]
    fn a_session_is_found_by_its_token_only_until_signed_out() {
        let sessions = Sessions::new();
        let caller = Caller {
            namespace: "alpha".to_owned(),
            admin: false,
        };
        let token = sessions.sign_in(caller.clone());
        assert_eq!(
            sessions.find(&token).map(|s| s.caller.clone()),
            Some(caller)
        );
        assert!(sessions.find(&random_token()).is_none());
        sessions.sign_out(&token);
        assert!(sessions.find(&token).is_none());
    }
}
