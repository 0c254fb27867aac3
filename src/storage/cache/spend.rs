//! Daily spend counters shared by replicas: each namespace's tokens and
//! cost of one UTC day, added atomically in Redis and expiring after that
//! day, so every replica enforces the same budget. Best effort like the
//! cache: behind the same timeout and circuit breaker, and `None` when Redis
//! cannot answer — the ledger then falls back to its own view, and
//! `/readyz` says the shared cache is degraded.

use async_trait::async_trait;

use super::redis::RedisCache;

/// Adds `ARGV[1]` tokens and `ARGV[2]` USD to the hash `KEYS[1]`, makes it
/// expire at Unix time `ARGV[3]`, and answers the totals (the cost as a string).
const ADD: &str = r"
local tokens = redis.call('HINCRBY', KEYS[1], 'tokens', ARGV[1])
local cost = redis.call('HINCRBYFLOAT', KEYS[1], 'cost', ARGV[2])
redis.call('EXPIREAT', KEYS[1], ARGV[3])
return {tokens, cost}
";

/// A namespace's spend of one day: (tokens, USD).
pub type DaySpend = (u64, f64);

/// Spend counters shared by every replica.
#[async_trait]
pub trait SharedSpend: Send + Sync {
    /// Adds to `namespace`'s counters of `day` (kept until Unix time
    /// `expire_at`); answers the new totals, or `None` when unavailable.
    async fn add(
        &self,
        namespace: &str,
        day: &str,
        spend: DaySpend,
        expire_at: i64,
    ) -> Option<DaySpend>;
    /// `namespace`'s totals of `day` (zero when none), or `None` when unavailable.
    async fn get(&self, namespace: &str, day: &str) -> Option<DaySpend>;
}

#[async_trait]
impl SharedSpend for RedisCache {
    async fn add(
        &self,
        namespace: &str,
        day: &str,
        (tokens, cost): DaySpend,
        expire_at: i64,
    ) -> Option<DaySpend> {
        let key = self.spend_key(namespace, day);
        let mut conn = self.conn.clone();
        let (tokens, cost): (u64, String) = self
            .guarded(
                redis::cmd("EVAL")
                    .arg(ADD)
                    .arg(1)
                    .arg(&key)
                    .arg(tokens)
                    .arg(cost)
                    .arg(expire_at)
                    .query_async(&mut conn),
            )
            .await?;
        Some((tokens, cost.parse().unwrap_or(0.0)))
    }

    async fn get(&self, namespace: &str, day: &str) -> Option<DaySpend> {
        let key = self.spend_key(namespace, day);
        let mut conn = self.conn.clone();
        let (tokens, cost): (Option<u64>, Option<String>) = self
            .guarded(
                redis::cmd("HMGET")
                    .arg(&key)
                    .arg("tokens")
                    .arg("cost")
                    .query_async(&mut conn),
            )
            .await?;
        Some((
            tokens.unwrap_or(0),
            cost.and_then(|c| c.parse().ok()).unwrap_or(0.0),
        ))
    }
}
