//! Tests of the PostgreSQL store against a real server: `CAIRN_TEST_DATABASE_URL`
//! names it (skipped when unset or unreachable, failed instead when `CI` is
//! set). Every test works in a fresh schema of its own, dropped at the end.
//! Search and GC tests are in [`super::postgres_search_tests`].

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, Executor, PgConnection};

use super::postgres::PgMetaStore;
use super::*;

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
    let store = PgMetaStore::open_with(options.clone().options([("search_path", &schema)]))
        .await
        .unwrap();
    Some(TestStore {
        store: Arc::new(store),
        options,
        schema,
    })
}

pub(super) fn hash_of(content: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(content))
}

pub(super) fn raw_put(namespace: &str, content: &str, now: i64) -> NewMemory {
    NewMemory {
        namespace: namespace.into(),
        fields: MemoryFields {
            kind: "TOOL_OUTPUT".into(),
            mime: "text/plain".into(),
            ..MemoryFields::default()
        },
        tokens: 3,
        token_method: "estimate:bytes/4".into(),
        summary: "s".into(),
        now,
        object: ObjectRecord {
            hash: hash_of(content.as_bytes()),
            bytes: content.len() as u64,
            lines: 1,
            stored_bytes: content.len() as u64,
            layout: Layout::Raw,
            data: Some(content.as_bytes().to_vec()),
            frames: Vec::new(),
        },
    }
}

pub(super) fn list_query(namespace: &str) -> ListQuery {
    ListQuery {
        namespace: namespace.into(),
        limit: 100,
        ..ListQuery::default()
    }
}

#[tokio::test]
async fn identical_concurrent_puts_create_one_memory_and_one_object() {
    let Some(t) = test_store().await else { return };
    let put = raw_put("a", "same content", 1);
    let tasks: Vec<_> = (0..32)
        .map(|_| {
            let (store, put) = (t.store.clone(), put.clone());
            tokio::spawn(async move { store.put(put).await.unwrap() })
        })
        .collect();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    assert_eq!(outcomes.iter().filter(|o| o.created).count(), 1);
    assert_eq!(outcomes.iter().filter(|o| o.object_created).count(), 1);
    assert!(outcomes.iter().all(|o| o.record.id == put.object.hash));
    // Another namespace: a new memory over the object already stored.
    let other = t.store.put(raw_put("b", "same content", 2)).await.unwrap();
    assert!(other.created && !other.object_created);
    assert_eq!(t.store.store_totals().await.unwrap().objects, 1);
    t.finish().await;
}

#[tokio::test]
async fn a_second_put_merges_its_fields_into_the_memory() {
    let Some(t) = test_store().await else { return };
    let mut first = raw_put("a", "content", 1_000);
    first.fields.title = Some("first".into());
    first.fields.tags = vec!["x".into()];
    first.fields.ttl_seconds = Some(10);
    let created = t.store.put(first.clone()).await.unwrap();
    assert_eq!(created.record.expires_at, Some(11_000));
    let mut second = raw_put("a", "content", 2_000);
    second.fields.title = Some("second".into());
    second.fields.thread = Some("t1".into());
    second.fields.tags = vec!["y".into(), "x".into()];
    second.fields.pinned = true;
    second.fields.ttl_seconds = Some(100);
    let merged = t.store.put(second).await.unwrap();
    assert!(!merged.created && !merged.object_created);
    let r = merged.record;
    assert_eq!(r.fields.title.as_deref(), Some("first"));
    assert_eq!(r.fields.thread.as_deref(), Some("t1"));
    assert_eq!(r.fields.tags, ["x", "y"]);
    assert!(r.fields.pinned);
    assert_eq!((r.created_at, r.updated_at), (1_000, 2_000));
    assert_eq!(r.expires_at, Some(102_000));
    // A put without a time to live makes it never expire.
    let r = t.store.put(raw_put("a", "content", 3_000)).await.unwrap();
    assert_eq!(r.record.expires_at, None);
    t.finish().await;
}

#[tokio::test]
async fn list_filters_pages_and_prefix_lookup() {
    let Some(t) = test_store().await else { return };
    let mut ids = Vec::new();
    for i in 0..5 {
        let mut put = raw_put("a", &format!("content {i}"), 100 + i);
        put.fields.thread = Some(if i % 2 == 0 { "even" } else { "odd" }.into());
        put.fields.tags = vec![format!("tag{}", i % 3)];
        ids.push(t.store.put(put).await.unwrap().record.id);
    }
    t.store.put(raw_put("b", "content 0", 5)).await.unwrap();
    let all = t.store.list(&list_query("a")).await.unwrap();
    let created: Vec<i64> = all.iter().map(|r| r.created_at).collect();
    assert_eq!(created, [104, 103, 102, 101, 100]);
    let even = ListQuery {
        thread: Some("even".into()),
        ..list_query("a")
    };
    assert_eq!(t.store.list(&even).await.unwrap().len(), 3);
    let tagged = ListQuery {
        tag: Some("tag1".into()),
        ..list_query("a")
    };
    let tagged = t.store.list(&tagged).await.unwrap();
    assert_eq!(tagged.len(), 2);
    assert!(tagged.iter().all(|r| r.fields.tags == ["tag1"]));
    let window = ListQuery {
        since: Some(101),
        until: Some(104),
        ..list_query("a")
    };
    assert_eq!(t.store.list(&window).await.unwrap().len(), 3);
    let first = ListQuery {
        limit: 2,
        ..list_query("a")
    };
    let page = t.store.list(&first).await.unwrap();
    assert_eq!(page.len(), 2);
    let last = page.last().unwrap();
    let next = ListQuery {
        after: Some((last.created_at, last.id.clone())),
        ..first
    };
    let page2 = t.store.list(&next).await.unwrap();
    assert_eq!(page2[0].created_at, 102);
    let prefix = &ids[0][..6];
    assert_eq!(
        t.store.ids_with_prefix("a", prefix, 10).await.unwrap(),
        [ids[0].clone()]
    );
    assert!(
        t.store
            .ids_with_prefix("c", prefix, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(t.store.get("a", &ids[0]).await.unwrap().is_some());
    assert!(t.store.delete("a", &ids[0]).await.unwrap());
    assert!(!t.store.delete("a", &ids[0]).await.unwrap());
    assert!(t.store.get("a", &ids[0]).await.unwrap().is_none());
    assert!(t.store.get("b", &ids[0]).await.unwrap().is_some());
    let totals = t.store.namespace_totals("a").await.unwrap();
    assert_eq!(totals.memories, 4);
    assert_eq!(t.store.namespaces().await.unwrap(), ["a", "b"]);
    t.finish().await;
}

#[tokio::test]
async fn framed_objects_keep_their_frame_index() {
    let Some(t) = test_store().await else { return };
    let mut put = raw_put("a", "framed", 1);
    put.object.layout = Layout::Blob;
    put.object.data = None;
    put.object.frames = (0..3u32)
        .map(|i| FrameEntry {
            content_offset: u64::from(i) * 10,
            content_len: 10,
            first_line: u64::from(i) + 1,
            stored_offset: u64::from(i) * 7,
            stored_len: 7,
            pages: PageEntry::of(b"0123456789"),
        })
        .collect();
    t.store.put(put.clone()).await.unwrap();
    let object = t.store.object(&put.object.hash).await.unwrap().unwrap();
    assert_eq!(object.frames, put.object.frames);
    assert_eq!(object.layout, Layout::Blob);
    t.finish().await;
}

#[tokio::test]
async fn retention_sees_every_memory_and_never_removes_pinned_ones() {
    let Some(t) = test_store().await else { return };
    let mut ids = Vec::new();
    for i in 0..3 {
        let mut put = raw_put("a", &format!("memory {i}"), 10 - i);
        put.fields.pinned = i == 2;
        ids.push(t.store.put(put).await.unwrap().record.id);
    }
    t.store
        .record_access(vec![AccessUpdate {
            namespace: "a".into(),
            id: ids[2].clone(),
            at: 50,
            count: 4,
        }])
        .await
        .unwrap();
    let filter = PruneFilter {
        namespace: "a".into(),
        ..PruneFilter::default()
    };
    let oldest = t
        .store
        .retention_rows(&filter, PruneOrder::Oldest)
        .await
        .unwrap();
    let order: Vec<&str> = oldest.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(order, [&ids[2], &ids[1], &ids[0]]);
    assert!(oldest[0].pinned);
    let least = t
        .store
        .retention_rows(&filter, PruneOrder::LeastAccessed)
        .await
        .unwrap();
    let order: Vec<&str> = least.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(order, [&ids[1], &ids[0], &ids[2]]);
    assert_eq!(
        (least[2].access_count, least[2].last_accessed_at),
        (4, Some(50))
    );
    assert_eq!(t.store.remove_memories("a", ids.clone()).await.unwrap(), 2);
    let left = t.store.list(&list_query("a")).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].id, ids[2]);
    // Expiry: the unpinned expired memory goes, the pinned one stays.
    let mut expiring = raw_put("a", "short lived", 1_000);
    expiring.fields.ttl_seconds = Some(1);
    let expiring = t.store.put(expiring).await.unwrap().record.id;
    assert_eq!(t.store.expire_memories(1_500).await.unwrap(), 0);
    assert_eq!(t.store.expire_memories(2_000).await.unwrap(), 1);
    assert!(t.store.get("a", &expiring).await.unwrap().is_none());
    assert_eq!(t.store.list(&list_query("a")).await.unwrap().len(), 1);
    t.finish().await;
}

#[tokio::test]
async fn verify_helpers_page_objects_and_mark_corruption() {
    let Some(t) = test_store().await else { return };
    let mut hashes = Vec::new();
    for i in 0..5 {
        hashes.push(
            t.store
                .put(raw_put("a", &format!("o{i}"), 1))
                .await
                .unwrap()
                .record
                .id,
        );
    }
    hashes.sort();
    let first = t.store.objects_after(None, 3).await.unwrap();
    let next = t
        .store
        .objects_after(Some(&first[2].hash), 3)
        .await
        .unwrap();
    let seen: Vec<String> = first.iter().chain(&next).map(|o| o.hash.clone()).collect();
    assert_eq!(seen, hashes);
    assert_eq!(
        t.store.mark_corrupt(&hashes[0], "bad crc").await.unwrap(),
        1
    );
    let record = t.store.get("a", &hashes[0]).await.unwrap().unwrap();
    assert_eq!(record.corrupt.as_deref(), Some("bad crc"));
    t.store.ping().await.unwrap();
    t.finish().await;
}

#[tokio::test]
async fn the_ledger_adds_up_and_sets_calibrations() {
    let Some(t) = test_store().await else { return };
    let batch = LedgerBatch {
        counters: vec![
            LedgerCounter {
                namespace: "a".into(),
                name: "puts".into(),
                value: 2,
                cost_usd: 0.5,
            },
            LedgerCounter {
                namespace: "a".into(),
                name: "puts".into(),
                value: 3,
                cost_usd: 0.25,
            },
        ],
        usage: vec![UsageRow {
            namespace: "a".into(),
            model: "m".into(),
            day: "2026-01-01".into(),
            input_tokens: 10,
            output_tokens: 5,
            cost_usd: 0.1,
            reports: 1,
        }],
        calibrations: vec![CalibrationRow {
            namespace: "a".into(),
            model: "m".into(),
            factor: 1.5,
            samples: 3,
            updated_at: 9,
        }],
    };
    t.store.write_ledger(batch.clone()).await.unwrap();
    let mut later = batch.clone();
    later.usage[0].day = "2026-01-02".into();
    later.calibrations[0].factor = 2.0;
    t.store.write_ledger(later).await.unwrap();
    let counters = t.store.ledger_counters("a").await.unwrap();
    assert_eq!(counters.len(), 1);
    assert_eq!(counters[0].value, 10);
    assert!((counters[0].cost_usd - 1.5).abs() < 1e-9);
    let usage = t.store.usage_totals(&UsageQuery::default()).await.unwrap();
    assert_eq!(usage.len(), 1);
    assert_eq!((usage[0].input_tokens, usage[0].reports), (20, 2));
    assert_eq!(usage[0].day, "2026-01-02");
    let one_day = UsageQuery {
        namespace: Some("a".into()),
        day: Some("2026-01-01".into()),
    };
    assert_eq!(
        t.store.usage_totals(&one_day).await.unwrap()[0].input_tokens,
        10
    );
    let calibrations = t.store.calibrations(Some("a")).await.unwrap();
    assert_eq!(calibrations.len(), 1);
    assert!((calibrations[0].factor - 2.0).abs() < 1e-9);
    assert!(t.store.calibrations(Some("b")).await.unwrap().is_empty());
    t.finish().await;
}

#[tokio::test]
async fn import_restores_once_with_the_archived_metadata() {
    let Some(t) = test_store().await else { return };
    let put = raw_put("a", "archived", 0);
    let memory = ImportedMemory {
        namespace: "a".into(),
        fields: put.fields.clone(),
        tokens: 7,
        token_method: "exact:o200k_base".into(),
        summary: "archived".into(),
        created_at: 100,
        updated_at: 200,
        last_accessed_at: Some(300),
        access_count: 4,
        expires_at: None,
        object: put.object.clone(),
    };
    assert!(t.store.import_memory(memory.clone()).await.unwrap());
    assert!(!t.store.import_memory(memory).await.unwrap());
    let r = t.store.get("a", &put.object.hash).await.unwrap().unwrap();
    assert_eq!((r.created_at, r.updated_at), (100, 200));
    assert_eq!(
        (r.last_accessed_at, r.access_count, r.tokens),
        (Some(300), 4, 7)
    );
    t.finish().await;
}

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
    let reopened = PgMetaStore::open(&url).await.unwrap();
    assert!(reopened.get("a", &id).await.unwrap().is_some());
    reopened.close().await;
    t.finish().await;
}
