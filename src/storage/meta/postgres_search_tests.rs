//! Tests of the PostgreSQL full-text index, of GC (which takes index rows
//! with the objects) and of object leases (which GC and puts of other
//! replicas take), on the harness of [`super::postgres_tests`].

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::postgres::PgMetaStore;
use super::postgres_tests::{hash_of, list_query, raw_put, test_store};
use super::*;

async fn index(store: &PgMetaStore, hash: &str, frames: &[&str]) {
    let batch = FrameBatch {
        hash: hash.into(),
        frames: frames
            .iter()
            .enumerate()
            .map(|(i, text)| IndexedFrame {
                idx: u32::try_from(i).unwrap(),
                text: (*text).to_owned(),
            })
            .collect(),
        done: true,
    };
    store.index_frames(batch.clone()).await.unwrap();
    store.index_frames(batch).await.unwrap(); // idempotent
}

/// Memories of `namespace` matching `fts`, an FTS5 expression as the
/// domain's query translation writes it (`open file` → `"open" "file"`; the
/// domain's tests pin those translations).
async fn found(store: &PgMetaStore, namespace: &str, fts: &str) -> Vec<(String, Vec<u32>)> {
    store
        .search(fts, &list_query(namespace))
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.record.summary, r.frames))
        .collect()
}

#[tokio::test]
async fn search_matches_phrases_prefixes_and_not_within_the_namespace() {
    let Some(t) = test_store().await else { return };
    let mut docs = Vec::new();
    for (name, text) in [
        ("one", "the open-file handle failed\nparsing config.yaml"),
        ("two", "open the file later; parser ok"),
        ("three", "nothing relevant here"),
    ] {
        let mut put = raw_put("a", text, 1);
        put.summary = name.into();
        docs.push(t.store.put(put).await.unwrap().record.id);
    }
    assert_eq!(t.store.index_lag().await.unwrap().objects, 3);
    assert_eq!(t.store.search_pending(10).await.unwrap().len(), 3);
    for (id, text) in docs.iter().zip([
        "the open-file handle failed\nparsing config.yaml",
        "open the file later; parser ok",
        "nothing relevant here",
    ]) {
        index(&t.store, id, &[text]).await;
    }
    assert_eq!(t.store.index_lag().await.unwrap(), IndexLag::default());
    let names = |rows: Vec<(String, Vec<u32>)>| {
        let mut names: Vec<String> = rows.into_iter().map(|(n, _)| n).collect();
        names.sort();
        names
    };
    assert_eq!(names(found(&t.store, "a", r#""open file""#).await), ["one"]);
    assert_eq!(
        names(found(&t.store, "a", r#""open" "file""#).await),
        ["one", "two"]
    );
    assert_eq!(
        names(found(&t.store, "a", r#""pars"*"#).await),
        ["one", "two"]
    );
    assert_eq!(names(found(&t.store, "a", r#""file han"*"#).await), ["one"]);
    assert_eq!(
        names(found(&t.store, "a", r#""open" NOT "handle""#).await),
        ["two"]
    );
    assert_eq!(
        names(found(&t.store, "a", r#""config yaml" OR "relevant""#).await),
        ["one", "three"]
    );
    assert!(found(&t.store, "a", r#""zebra""#).await.is_empty());
    // Another namespace sees nothing until it holds the content itself.
    assert!(found(&t.store, "b", r#""open""#).await.is_empty());
    let mut put = raw_put("b", "open the file later; parser ok", 2);
    put.summary = "mine".into();
    t.store.put(put).await.unwrap();
    assert_eq!(names(found(&t.store, "b", r#""open""#).await), ["mine"]);
    t.finish().await;
}

#[tokio::test]
async fn search_spans_the_parts_of_a_large_frame_and_ranks_frames() {
    let Some(t) = test_store().await else { return };
    let filler = "lorem ipsum dolor sit amet\n".repeat(4_000); // ~108 KB: several parts
    let big = format!("alphaword at the start\n{filler}omegaword at the end\n");
    let small = "omegaword omegaword omegaword";
    let mut put = raw_put("a", &format!("{big}{small}"), 1);
    put.summary = "big".into();
    let id = t.store.put(put).await.unwrap().record.id;
    index(&t.store, &id, &[&big, small, "unrelated"]).await;
    let parts: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM search_parts WHERE idx = 0")
        .fetch_one(&t.pool().await)
        .await
        .unwrap();
    assert!(parts > 3, "{parts} parts");
    // Both words, in different parts of frame 0: the frame matches as a whole.
    assert_eq!(
        found(&t.store, "a", r#""alphaword" "omegaword""#).await,
        [("big".into(), vec![0])]
    );
    assert_eq!(
        found(&t.store, "a", r#""alphaword" NOT "omegaword""#).await,
        []
    );
    // Frame 1 says it three times in a short text: ranked first.
    assert_eq!(
        found(&t.store, "a", r#""omegaword""#).await,
        [("big".into(), vec![1, 0])]
    );
    let rows = t
        .store
        .search("\"omegaword\"", &list_query("a"))
        .await
        .unwrap();
    assert!(
        rows[0].score < 0.0,
        "lower is better, as bm25: {}",
        rows[0].score
    );
    t.finish().await;
}

#[tokio::test]
async fn gc_removes_only_objects_no_memory_refers_to() {
    let Some(t) = test_store().await else { return };
    let put = raw_put("a", "collectable", 1);
    let id = t.store.put(put.clone()).await.unwrap().record.id;
    index(&t.store, &id, &["collectable"]).await;
    assert!(t.store.unreferenced_objects().await.unwrap().is_empty());
    assert!(
        !t.store
            .remove_object_if_unreferenced(&id, i64::MAX)
            .await
            .unwrap()
    );
    assert!(t.store.delete("a", &id).await.unwrap());
    let unreferenced = t.store.unreferenced_objects().await.unwrap();
    assert_eq!(unreferenced.len(), 1);
    let idle_since = unreferenced[0].idle_since;
    assert!(idle_since > 1, "the release time counts: {idle_since}");
    // Still in its grace period.
    assert!(
        !t.store
            .remove_object_if_unreferenced(&id, idle_since)
            .await
            .unwrap()
    );
    assert!(
        t.store
            .remove_object_if_unreferenced(&id, i64::MAX)
            .await
            .unwrap()
    );
    assert!(t.store.object(&id).await.unwrap().is_none());
    assert!(
        !t.store
            .remove_object_if_unreferenced(&id, i64::MAX)
            .await
            .unwrap()
    );
    let pool = t.pool().await;
    let rows: i64 = sqlx::query_scalar(
        "SELECT (SELECT COUNT(*) FROM search_parts) + (SELECT COUNT(*) FROM search_frames)",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(rows, 0, "index rows go with the object");
    // A put and a collection racing: whatever wins, a memory never loses its object.
    for round in 0..20 {
        let put = raw_put("a", &format!("raced {round}"), 1);
        let id = t.store.put(put.clone()).await.unwrap().record.id;
        t.store.delete("a", &id).await.unwrap();
        let (store, again) = (t.store.clone(), put.clone());
        let putter = tokio::spawn(async move { store.put(again).await.unwrap() });
        let (store, hash) = (t.store.clone(), id.clone());
        let collector = tokio::spawn(async move {
            store
                .remove_object_if_unreferenced(&hash, i64::MAX)
                .await
                .unwrap()
        });
        let (outcome, _) = (putter.await.unwrap(), collector.await.unwrap());
        assert!(outcome.created);
        assert!(
            t.store.object(&id).await.unwrap().is_some(),
            "round {round}"
        );
        assert!(t.store.memories_without_object().await.unwrap().is_empty());
    }
    t.finish().await;
}

#[tokio::test]
async fn an_object_lease_makes_a_second_process_wait_until_it_is_dropped() {
    let Some(t) = test_store().await else { return };
    // A second store on the same schema stands for another replica.
    let other = PgMetaStore::open_with(t.options.clone().options([("search_path", &t.schema)]))
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
