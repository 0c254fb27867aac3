//! Per-namespace request limits, off by default: a request rate (a token
//! bucket per namespace: `CAIRN_LIMIT_RATE` a second, bursts of
//! `CAIRN_LIMIT_BURST`) and requests in flight at once
//! (`CAIRN_LIMIT_CONCURRENT`; a proxied stream counts until it ends). Over a
//! limit the answer is 429 `rate_limited` with `Retry-After` — in the
//! provider's own error shape on the proxy routes. Keys of one namespace
//! share its limits.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::auth::Caller;
use super::error::AppError;
use crate::metrics::Metrics;

/// Each namespace's places for requests in flight.
type Places = Mutex<HashMap<String, Arc<Semaphore>>>;

/// The limits in force.
pub struct Limits {
    rate: Option<DefaultKeyedRateLimiter<String>>,
    concurrent: Option<(u32, Places)>,
    metrics: Arc<Metrics>,
}

/// A request let through: holds its place among the namespace's requests in
/// flight until dropped.
pub struct Admitted {
    _permit: Option<OwnedSemaphorePermit>,
}

/// Which surface a request came through (metric label).
#[derive(Clone, Copy)]
pub enum Surface {
    /// The REST API and MCP.
    Api,
    /// The LLM proxy.
    Proxy,
}

impl Surface {
    fn name(self) -> &'static str {
        match self {
            Self::Api => "api",
            Self::Proxy => "proxy",
        }
    }
}

impl Limits {
    /// `rate` requests a second with bursts of `burst` (no rate limit when
    /// `rate` is 0) and `concurrent` requests at once (none when 0), per namespace.
    pub fn new(rate: u32, burst: u32, concurrent: u32, metrics: Arc<Metrics>) -> Self {
        let rate = NonZeroU32::new(rate).map(|per_second| {
            let burst = NonZeroU32::new(burst).unwrap_or(per_second);
            RateLimiter::keyed(Quota::per_second(per_second).allow_burst(burst))
        });
        Self {
            rate,
            concurrent: (concurrent > 0).then(|| (concurrent, Mutex::new(HashMap::new()))),
            metrics,
        }
    }

    /// Lets a request of `namespace` through, or answers why not (429).
    pub fn admit(&self, namespace: &str, surface: Surface) -> Result<Admitted, AppError> {
        if let Some(rate) = &self.rate
            && let Err(not_until) = rate.check_key(&namespace.to_owned())
        {
            let wait = not_until.wait_time_from(governor::clock::Clock::now(
                &governor::clock::DefaultClock::default(),
            ));
            return Err(self.refused(surface, "rate", wait.as_secs() + 1));
        }
        let permit = match &self.concurrent {
            Some((most, slots)) => {
                let semaphore = slots
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .entry(namespace.to_owned())
                    .or_insert_with(|| Arc::new(Semaphore::new(*most as usize)))
                    .clone();
                match semaphore.try_acquire_owned() {
                    Ok(permit) => Some(permit),
                    Err(_) => return Err(self.refused(surface, "concurrency", 1)),
                }
            }
            None => None,
        };
        Ok(Admitted { _permit: permit })
    }

    fn refused(&self, surface: Surface, limit: &'static str, retry_after: u64) -> AppError {
        self.metrics
            .limit_rejections
            .with_label_values(&[surface.name(), limit])
            .inc();
        let message = match limit {
            "rate" => "too many requests for this namespace (CAIRN_LIMIT_RATE): retry later",
            _ => {
                "too many requests in flight for this namespace (CAIRN_LIMIT_CONCURRENT): retry when one ends"
            }
        };
        AppError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", message)
            .with("limit", limit)
            .with_header(header::RETRY_AFTER, HeaderValue::from(retry_after.max(1)))
    }
}

/// Middleware for the authenticated REST and MCP routes (after the key
/// check): admits the caller's request or answers 429.
pub async fn enforce(State(limits): State<Arc<Limits>>, request: Request, next: Next) -> Response {
    let Some(caller) = request.extensions().get::<Caller>().cloned() else {
        return next.run(request).await;
    };
    match limits.admit(&caller.namespace, Surface::Api) {
        Ok(admitted) => {
            let response = next.run(request).await;
            drop(admitted);
            response
        }
        Err(refused) => refused.into_response(),
    }
}
