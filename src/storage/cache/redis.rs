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

/// The metrics label of this layer's failures and state.
const LAYER: &str = "redis";

/// The lookup label of cached frames.
pub const FRAMES: &str = "redis";

/// The lookup label of cached object records.
pub const OBJECTS: &str = "redis_object";

/// Stores `KEYS[1]` = `ARGV[1]` for `ARGV[2]` s and adds `ARGV[3]` bytes to
/// the budget counter `KEYS[3]` (kept `ARGV[4]` s), unless the tombstone
/// `KEYS[2]` exists; answers 1 when stored. Every key is declared, as
/// Dragonfly requires.
const PUT_UNLESS: &str = r"
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
redis.call('INCRBY', KEYS[3], ARGV[3])
redis.call('EXPIRE', KEYS[3], ARGV[4])
return 1
";

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
    pub(super) conn: ConnectionManager,
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

    /// The key of a namespace's shared spend counters of one UTC day.
    pub fn spend_key(&self, namespace: &str, day: &str) -> String {
        format!("{}:spend:{day}:{namespace}", self.settings.prefix)
    }

    /// The key of the object record of `hash`.
    pub fn object_key(&self, hash: &str) -> String {
        format!("{}:object:{hash}", self.settings.prefix)
    }

    /// The tombstone that keeps the object record of `hash` out of the cache
    /// while its removal may race a fill.
    pub fn object_gone_key(&self, hash: &str) -> String {
        format!("{}:object-gone:{hash}", self.settings.prefix)
    }

    /// Runs `call` under the breaker and the timeout; `None` when skipped or failed.
    pub(super) async fn guarded<T, F>(&self, call: F) -> Option<T>
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

    /// The cached value of `key`, counted as a lookup of `layer`; `None` on a
    /// miss and whenever Redis cannot answer in time.
    pub async fn get(&self, key: &str, layer: &str) -> Option<Bytes> {
        let mut conn = self.conn.clone();
        let found: Option<Option<Vec<u8>>> = self.guarded(conn.get(key)).await;
        let value = found.flatten().map(Bytes::from);
        self.metrics.cache(layer, value.is_some());
        value
    }

    /// Stores `value` under `key` with the TTL, unless the window's byte budget is spent.
    pub async fn put(&self, key: &str, value: Bytes) {
        let Some(window) = self.admit(key, value.len() as u64).await else {
            return;
        };
        let mut pipe = redis::pipe();
        pipe.set_ex(key, value.as_ref(), window.ttl_secs)
            .ignore()
            .incr(&window.budget_key, window.len)
            .ignore()
            .expire(&window.budget_key, window.budget_ttl())
            .ignore();
        let mut conn = self.conn.clone();
        let _: Option<()> = self
            .guarded(async { pipe.query_async(&mut conn).await })
            .await;
    }

    /// Like [`RedisCache::put`], but only while `tombstone` does not exist,
    /// checked and written in one script: a fill racing an invalidation
    /// ([`RedisCache::invalidate`]) cannot bring the entry back.
    pub async fn put_unless(&self, key: &str, tombstone: &str, value: Bytes) {
        let Some(window) = self.admit(key, value.len() as u64).await else {
            return;
        };
        let mut conn = self.conn.clone();
        let stored: Option<i64> = self
            .guarded(async {
                redis::cmd("EVAL")
                    .arg(PUT_UNLESS)
                    .arg(3)
                    .arg(key)
                    .arg(tombstone)
                    .arg(&window.budget_key)
                    .arg(value.as_ref())
                    .arg(window.ttl_secs)
                    .arg(window.len)
                    .arg(window.budget_ttl())
                    .query_async(&mut conn)
                    .await
            })
            .await;
        if stored == Some(0) {
            tracing::debug!(key, "entry invalidated meanwhile; not cached");
        }
    }

    /// Sets `tombstone` for `hold` and drops `key`, in one transaction. True
    /// only when Redis did both: then no [`RedisCache::put_unless`] guarded by
    /// `tombstone` stores `key` again until `hold` has passed.
    pub async fn invalidate(&self, key: &str, tombstone: &str, hold: Duration) -> bool {
        let mut pipe = redis::pipe();
        pipe.atomic()
            .set_ex(tombstone, 1, hold.as_secs().max(1))
            .ignore()
            .del(key)
            .ignore();
        let mut conn = self.conn.clone();
        let done: Option<()> = self
            .guarded(async { pipe.query_async(&mut conn).await })
            .await;
        done.is_some()
    }

    /// Whether `len` more bytes fit this window's budget (`None`: they do
    /// not, or Redis cannot tell); `key` is only for the log.
    async fn admit(&self, key: &str, len: u64) -> Option<Window> {
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
        let (now, before) = spent?;
        if now.unwrap_or(0) + before.unwrap_or(0) + len > self.settings.max_bytes {
            tracing::debug!(
                key,
                len,
                "Redis cache budget spent for this window; not cached"
            );
            return None;
        }
        Some(Window {
            budget_key: current,
            ttl_secs,
            len,
        })
    }

    /// Drops `key` (an entry that failed verification), best effort.
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

/// Bytes admitted to the current budget window.
struct Window {
    /// The counter of bytes written in this window.
    budget_key: String,
    /// Lifetime of an entry, in seconds.
    ttl_secs: u64,
    /// Bytes admitted.
    len: u64,
}

impl Window {
    /// How long the window's counter is kept: it counts in the next window too.
    fn budget_ttl(&self) -> i64 {
        i64::try_from(self.ttl_secs.saturating_mul(2)).unwrap_or(i64::MAX)
    }
}
