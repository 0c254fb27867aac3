//! Object leases on PostgreSQL: a session-level advisory lock per object, so
//! that a put on one replica and a GC on another take turns on the same object
//! (see the domain's `gc` module for what each side holds it across).
//!
//! Leases have a pool of their own. A lease waiting for the lock holds its
//! connection, and the holder of a lease needs a connection of the main pool
//! to finish its put or GC: with one shared pool, waiting leases could take
//! every connection and starve the holder.

use std::time::Duration;

use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Postgres};

use super::super::ObjectLease;
use crate::storage::StorageError;

/// Connections of the lease pool: leases held or waiting at once, per process.
const LEASE_CONNECTIONS: u32 = 16;

/// How long a lease may wait for a connection and then for the lock.
const LEASE_TIMEOUT: Duration = Duration::from_secs(30);

/// The pool that holds leases.
pub(super) async fn pool(options: PgConnectOptions) -> Result<PgPool, StorageError> {
    Ok(PgPoolOptions::new()
        .max_connections(LEASE_CONNECTIONS)
        .min_connections(0)
        .acquire_timeout(LEASE_TIMEOUT)
        .connect_lazy_with(options))
}

/// The advisory-lock key of object `hash`: its first 64 bits. Two objects
/// that share them only wait for each other.
pub(super) fn key(hash: &str) -> i64 {
    let head = hash.get(..16).unwrap_or(hash);
    let key = u64::from_str_radix(head, 16).unwrap_or_else(|_| {
        // Not hex (never for stored ids): fold the bytes instead.
        hash.bytes()
            .fold(0u64, |k, b| k.rotate_left(8) ^ u64::from(b))
    });
    key as i64
}

/// Waits for the lease of object `hash`.
pub(super) async fn acquire(pool: &PgPool, hash: &str) -> Result<ObjectLease, StorageError> {
    let key = key(hash);
    let mut conn = pool.acquire().await?;
    let locked = tokio::time::timeout(
        LEASE_TIMEOUT,
        sqlx::query("SELECT pg_advisory_lock($1)")
            .bind(key)
            .execute(&mut *conn),
    )
    .await;
    match locked {
        Ok(Ok(_)) => Ok(ObjectLease::new(Held {
            conn: Some(conn),
            key,
        })),
        Ok(Err(e)) => {
            // The lock may be granted and the answer lost: never pool this connection.
            drop(conn.detach());
            Err(e.into())
        }
        Err(_) => {
            drop(conn.detach());
            Err(StorageError::Unavailable(format!(
                "object {hash} stayed locked by another replica for {LEASE_TIMEOUT:?}"
            )))
        }
    }
}

/// A granted advisory lock and the session that holds it.
struct Held {
    conn: Option<PoolConnection<Postgres>>,
    key: i64,
}

impl Drop for Held {
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        let key = self.key;
        match tokio::runtime::Handle::try_current() {
            // Unlocks before the connection goes back to the pool.
            Ok(runtime) => {
                runtime.spawn(async move {
                    let unlocked = sqlx::query_scalar::<_, bool>("SELECT pg_advisory_unlock($1)")
                        .bind(key)
                        .fetch_one(&mut *conn)
                        .await;
                    if !matches!(unlocked, Ok(true)) {
                        tracing::warn!(
                            key,
                            ?unlocked,
                            "object lease not released; closing its connection"
                        );
                        drop(conn.detach());
                    }
                });
            }
            // No runtime to unlock on: closing the session releases the lock.
            Err(_) => drop(conn.detach()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::key;

    #[test]
    fn keys_are_the_first_64_bits_of_the_hash() {
        let hash = format!("{}{}", "ff00000000000001", "ab".repeat(24));
        assert_eq!(key(&hash), 0xff00_0000_0000_0001_u64 as i64);
        assert_ne!(key(&hash), key(&"ab".repeat(32)));
        // Short or odd input still gives a key, and the same one each time.
        assert_eq!(key("not-hex"), key("not-hex"));
        assert_eq!(key("12"), 0x12);
    }
}
