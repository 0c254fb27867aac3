//! Redis (or Dragonfly) as a cache shared by replicas: best effort, bounded in
//! time (a short timeout and a circuit breaker) and in bytes (a budget per
//! TTL window), never a source of truth.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use redis::AsyncCommands;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::breaker::{Breaker, Gate};
use crate::metrics::Metrics;

/// The metrics label of this layer.
const LAYER: &str = "redis";

/// How long the cache is left alone once its circuit opens.
const PAUSE: Duration = Duration::from_secs(5);

/// Settings of the shared cache.
#[derive(Clone, Debug)]
pub struct RedisSettings {
    /// `redis://host:port[/db]` (or `rediss://`).
    pub url: String,
    /// Prefix of every key, so several deployments can share one server.
    pub prefix: String,
    /// Lifetime of an entry.
    pub ttl: Duration,
    /// At most this many bytes written per TTL window (every entry alive was
    /// written in the current or the previous window, so live bytes stay below
    /// twice this).
    pub max_bytes: u64,
    /// Deadline of each cache call; past it the store answers.
    pub timeout: Duration,
}

/// A Redis connection with the cache's discipline around every call.
pub struct RedisCache {
    conn: ConnectionManager,
    settings: RedisSettings,
    breaker: Breaker,
    metrics: Arc<Metrics>,
}

impl RedisCache {
    /// A cache over `settings.url`; connects lazily, so a Redis that is down at
    /// start-up only degrades the cache.
    pub fn open(settings: RedisSettings, metrics: Arc<Metrics>) -> anyhow::Result<Self> {
        let client = redis::Client::open(settings.url.as_str())
            .map_err(|e| anyhow::anyhow!("invalid Redis URL: {e}"))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(settings.timeout.max(Duration::from_millis(200))))
            .set_response_timeout(Some(settings.timeout))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(500));
        let conn = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(|e| anyhow::anyhow!("cannot set up the Redis connection: {e}"))?;
        metrics.cache_degraded.with_label_values(&[LAYER]).set(0);
        Ok(Self {
            conn,
            settings,
            breaker: Breaker::new(PAUSE),
            metrics,
        })
    }

    /// The key of stored bytes `[offset, offset + len)` of object `hash`.
    pub fn frame_key(&self, hash: &str, offset: u64, len: u64) -> String {
        format!("{}:frame:{hash}:{offset}:{len}", self.settings.prefix)
    }

    /// Runs `call` under the breaker and the timeout; `None` when skipped or failed.
    async fn guarded<T, F>(&self, call: F) -> Option<T>
    where
        F: Future<Output = redis::RedisResult<T>>,
    {
        if self.breaker.gate() == Gate::Open {
            self.metrics.cache_error(LAYER, "circuit_open");
            return None;
        }
        let (reason, error) = match tokio::time::timeout(self.settings.timeout, call).await {
            Ok(Ok(value)) => {
                if self.breaker.degraded().is_some() {
                    tracing::info!("Redis cache answers again");
                    self.metrics
                        .cache_degraded
                        .with_label_values(&[LAYER])
                        .set(0);
                }
                self.breaker.success();
                return Some(value);
            }
            Ok(Err(e)) => ("error", e.to_string()),
            Err(_) => (
                "timeout",
                format!("no answer within {:?}", self.settings.timeout),
            ),
        };
        self.metrics.cache_error(LAYER, reason);
        if self.breaker.failure(error.clone()) {
            tracing::warn!(%error, "Redis cache degraded: requests go to the stores for {PAUSE:?}");
            self.metrics
                .cache_degraded
                .with_label_values(&[LAYER])
                .set(1);
        }
        None
    }

    /// The cached value of `key`; `None` on a miss and whenever Redis cannot answer in time.
    pub async fn get(&self, key: &str) -> Option<Bytes> {
        let mut conn = self.conn.clone();
        let found: Option<Option<Vec<u8>>> = self.guarded(conn.get(key)).await;
        let value = found.flatten().map(Bytes::from);
        self.metrics.cache(LAYER, value.is_some());
        value
    }

    /// Stores `value` under `key` with the TTL, unless the window's byte budget is spent.
    pub async fn put(&self, key: &str, value: Bytes) {
        let len = value.len() as u64;
        let ttl_secs = self.settings.ttl.as_secs().max(1);
        let window = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
            / ttl_secs;
        let budget_key = |w: u64| format!("{}:budget:{w}", self.settings.prefix);
        let (current, previous) = (budget_key(window), budget_key(window.saturating_sub(1)));
        let mut conn = self.conn.clone();
        let spent: Option<(Option<u64>, Option<u64>)> = self
            .guarded(async {
                redis::cmd("MGET")
                    .arg(&current)
                    .arg(&previous)
                    .query_async(&mut conn)
                    .await
            })
            .await;
        let Some((now, before)) = spent else {
            return;
        };
        if now.unwrap_or(0) + before.unwrap_or(0) + len > self.settings.max_bytes {
            tracing::debug!(
                key,
                len,
                "Redis cache budget spent for this window; not cached"
            );
            return;
        }
        let mut pipe = redis::pipe();
        pipe.set_ex(key, value.as_ref(), ttl_secs)
            .ignore()
            .incr(&current, len)
            .ignore()
            .expire(&current, i64::try_from(ttl_secs * 2).unwrap_or(i64::MAX))
            .ignore();
        let _: Option<()> = self
            .guarded(async { pipe.query_async(&mut conn).await })
            .await;
    }

    /// Drops `key` (an entry that failed verification).
    pub async fn remove(&self, key: &str) {
        let mut conn = self.conn.clone();
        let _: Option<()> = self.guarded(conn.del(key)).await;
    }

    /// A PING under the cache's timeout, for readiness (not counted by the breaker).
    pub async fn ping(&self) -> Result<(), String> {
        let mut conn = self.conn.clone();
        let ping = async { redis::cmd("PING").query_async::<String>(&mut conn).await };
        match tokio::time::timeout(self.settings.timeout.max(Duration::from_millis(200)), ping)
            .await
        {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("PING timed out".into()),
        }
    }

    /// `None` while healthy, else why requests bypass the cache.
    pub fn degraded(&self) -> Option<String> {
        self.breaker.degraded()
    }
}
