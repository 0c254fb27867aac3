//! Tests of the PostgreSQL store against a real server: `CAIRN_TEST_DATABASE_URL`
//! names it (skipped when unset or unreachable, failed instead when `CI` is
//! set). Every test works in a fresh schema of its own, dropped at the end.
//! The metadata contract runs here; what only PostgreSQL does (a schema
//! named in the URL, leases) is tested beside it, and how a replica's index
//! follows the store in [`super::feed_tests`].

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, Executor, PgConnection};

use super::PgMetaStore;
use crate::storage::meta::contract::{Subject, contract_suite, hash_of, raw_put};
use crate::storage::meta::{MemoryStore, MetaStore, ObjectStore};

/// A store in a schema of its own; [`TestStore::finish`] drops the schema.
pub(super) struct TestStore {
    pub(super) store: Arc<PgMetaStore>,
    pub(super) options: PgConnectOptions,
    pub(super) schema: String,
}

impl TestStore {
    /// A plain pool on the test schema, for looking at rows directly.
    pub(super) async fn pool(&self) -> sqlx::PgPool {
        sqlx::PgPool::connect_with(
            self.options
                .clone()
                .options([("search_path", &self.schema)]),
        )
        .await
        .unwrap()
    }

    pub(super) async fn finish(self) {
        self.store.close().await;
        self.drop_schema().await;
    }

    /// Drops the test's schema (the store is closed already, or about to be).
    async fn drop_schema(self) {
        if let Ok(mut conn) = PgConnection::connect_with(&self.options).await {
            let _ = conn
                .execute(format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema).as_str())
                .await;
        }
    }
}

pub(super) fn unavailable(why: String) -> Option<TestStore> {
    assert!(
        std::env::var_os("CI").is_none(),
        "PostgreSQL tests cannot run: {why}"
    );
    println!("skipped: {why}");
    None
}

/// A fresh schema on the test server, with the migrations applied.
pub(super) async fn test_store() -> Option<TestStore> {
    let Ok(url) = std::env::var("CAIRN_TEST_DATABASE_URL") else {
        return unavailable("CAIRN_TEST_DATABASE_URL is not set".into());
    };
    let options = match PgConnectOptions::from_str(&url) {
        Ok(options) => options,
        Err(e) => return unavailable(format!("bad CAIRN_TEST_DATABASE_URL: {e}")),
    };
    let mut conn = match PgConnection::connect_with(&options).await {
        Ok(conn) => conn,
        Err(e) => return unavailable(format!("cannot connect to {url}: {e}")),
    };
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let schema = format!(
        "cairn_test_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    conn.execute(format!("CREATE SCHEMA {schema}").as_str())
        .await
        .unwrap();
    let store = PgMetaStore::open_with(options.clone().options([("search_path", &schema)]), None)
        .await
        .unwrap();
    Some(TestStore {
        store: Arc::new(store),
        options,
        schema,
    })
}

/// A fresh schema for the contract suite, dropped when the test is over.
async fn open() -> Option<Subject> {
    let t = test_store().await?;
    let store: Arc<dyn MetaStore> = t.store.clone();
    Some(Subject::new(store, async move { t.drop_schema().await }))
}

contract_suite!(open);

#[tokio::test]
async fn open_takes_the_schema_from_the_url() {
    let Some(t) = test_store().await else { return };
    let url = std::env::var("CAIRN_TEST_DATABASE_URL").unwrap();
    let sep = if url.contains('?') { '&' } else { '?' };
    let url = format!("{url}{sep}options=-c%20search_path%3D{}", t.schema);
    let id = t
        .store
        .put(raw_put("a", "seen", 1))
        .await
        .unwrap()
        .record
        .id;
    let reopened = PgMetaStore::open(&url, None).await.unwrap();
    assert!(reopened.get("a", &id).await.unwrap().is_some());
    reopened.close().await;
    t.finish().await;
}

#[tokio::test]
async fn an_object_lease_makes_a_second_process_wait_until_it_is_dropped() {
    let Some(t) = test_store().await else { return };
    // A second store on the same schema stands for another replica.
    let other = PgMetaStore::open_with(
        t.options.clone().options([("search_path", &t.schema)]),
        None,
    )
    .await
    .unwrap();
    let hash = hash_of(b"leased");
    let held = t
        .store
        .lease_object(&hash)
        .await
        .unwrap()
        .expect("PostgreSQL leases");

    let waiting = tokio::spawn(async move {
        let lease = other.lease_object(&hash).await;
        (lease.map(|l| l.is_some()), other)
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        !waiting.is_finished(),
        "the other replica got the lease while it was held"
    );
    // Another object is not held up.
    let unrelated = t.store.lease_object(&hash_of(b"other")).await.unwrap();
    assert!(unrelated.is_some());

    drop(held);
    let (granted, other) = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
        .await
        .expect("the lease was not released")
        .unwrap();
    assert!(granted.unwrap());
    other.close().await;
    drop(unrelated);
    t.finish().await;
}
