//! Retention, garbage collection and verify.

use std::sync::Arc;

use super::super::{AccessUpdate, FrameBatch, IndexedFrame, ListQuery, MetaStore, PruneOrder};
use super::{list_query, raw_put};
use crate::storage::meta::expression::parse;

/// Prune orders, pinned memories kept, expiry by time.
pub(in crate::storage::meta) async fn retention_sees_every_memory_and_never_removes_pinned_ones(
    store: Arc<dyn MetaStore>,
) {
    let mut ids = Vec::new();
    for i in 0..3 {
        let mut put = raw_put("a", &format!("memory {i}"), 10 - i);
        put.fields.pinned = i == 2;
        ids.push(store.put(put).await.unwrap().record.id);
    }
    store
        .record_access(vec![AccessUpdate {
            namespace: "a".into(),
            id: ids[2].clone(),
            at: 50,
            count: 4,
        }])
        .await
        .unwrap();
    let filter = ListQuery {
        namespace: "a".into(),
        ..ListQuery::default()
    };
    let oldest = store
        .retention_rows(&filter, PruneOrder::Oldest)
        .await
        .unwrap();
    let order: Vec<&str> = oldest.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(order, [&ids[2], &ids[1], &ids[0]]);
    assert!(oldest[0].pinned);
    let least = store
        .retention_rows(&filter, PruneOrder::LeastAccessed)
        .await
        .unwrap();
    let order: Vec<&str> = least.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(order, [&ids[1], &ids[0], &ids[2]]);
    assert_eq!(
        (least[2].access_count, least[2].last_accessed_at),
        (4, Some(50))
    );
    assert_eq!(store.remove_memories("a", ids.clone()).await.unwrap(), 2);
    let left = store.list(&list_query("a")).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].id, ids[2]);
    // Expiry: the unpinned expired memory goes, the pinned one stays.
    let mut expiring = raw_put("a", "short lived", 1_000);
    expiring.fields.ttl_seconds = Some(1);
    let expiring = store.put(expiring).await.unwrap().record.id;
    assert_eq!(store.expire_memories(1_500).await.unwrap(), 0);
    assert_eq!(store.expire_memories(2_000).await.unwrap(), 1);
    assert!(store.get("a", &expiring).await.unwrap().is_none());
    assert_eq!(store.list(&list_query("a")).await.unwrap().len(), 1);
}

/// Objects page in hash order; a corrupt mark shows on the memory.
pub(in crate::storage::meta) async fn verify_helpers_page_objects_and_mark_corruption(
    store: Arc<dyn MetaStore>,
) {
    let mut hashes = Vec::new();
    for i in 0..5 {
        hashes.push(
            store
                .put(raw_put("a", &format!("o{i}"), 1))
                .await
                .unwrap()
                .record
                .id,
        );
    }
    hashes.sort();
    let first = store.objects_after(None, 3).await.unwrap();
    let next = store.objects_after(Some(&first[2].hash), 3).await.unwrap();
    let seen: Vec<String> = first.iter().chain(&next).map(|o| o.hash.clone()).collect();
    assert_eq!(seen, hashes);
    assert_eq!(store.mark_corrupt(&hashes[0], "bad crc").await.unwrap(), 1);
    let record = store.get("a", &hashes[0]).await.unwrap().unwrap();
    assert_eq!(record.corrupt.as_deref(), Some("bad crc"));
    store.ping().await.unwrap();
}

/// An object goes only when no memory refers to it and its grace period is
/// over, and its index rows go with it.
pub(in crate::storage::meta) async fn gc_removes_only_objects_no_memory_refers_to(
    store: Arc<dyn MetaStore>,
) {
    let put = raw_put("a", "collectable", 1);
    let id = store.put(put.clone()).await.unwrap().record.id;
    let batch = FrameBatch {
        hash: id.clone(),
        frames: vec![IndexedFrame {
            idx: 0,
            text: "collectable".into(),
            lines: Default::default(),
        }],
        first: true,
        done: true,
    };
    store.index_frames(batch).await.unwrap();
    store.search_pending(10).await.unwrap(); // the indexer's next look
    assert_eq!(
        store
            .search(&parse("\"collectable\"").unwrap(), &list_query("a"))
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(store.unreferenced_objects().await.unwrap().is_empty());
    assert!(
        !store
            .remove_object_if_unreferenced(&id, i64::MAX)
            .await
            .unwrap()
    );
    assert!(store.delete("a", &id).await.unwrap());
    let unreferenced = store.unreferenced_objects().await.unwrap();
    assert_eq!(unreferenced.len(), 1);
    let idle_since = unreferenced[0].idle_since;
    assert!(idle_since > 1, "the release time counts: {idle_since}");
    // Still in its grace period.
    assert!(
        !store
            .remove_object_if_unreferenced(&id, idle_since)
            .await
            .unwrap()
    );
    assert!(
        store
            .remove_object_if_unreferenced(&id, i64::MAX)
            .await
            .unwrap()
    );
    assert!(store.object(&id).await.unwrap().is_none());
    assert!(
        !store
            .remove_object_if_unreferenced(&id, i64::MAX)
            .await
            .unwrap()
    );
    assert!(store.unreferenced_objects().await.unwrap().is_empty());
    // The same content again is a new object waiting to be indexed: had the
    // old index rows stayed, it would be found before that.
    let again = store.put(put).await.unwrap();
    assert!(again.created && again.object_created);
    assert!(
        store
            .search(&parse("\"collectable\"").unwrap(), &list_query("a"))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.index_lag().await.unwrap().objects, 1);
}

/// A put and a collection of the same object racing: whatever wins, a
/// memory never loses its object.
pub(in crate::storage::meta) async fn a_put_racing_a_collection_never_loses_its_object(
    store: Arc<dyn MetaStore>,
) {
    for round in 0..20 {
        let put = raw_put("a", &format!("raced {round}"), 1);
        let id = store.put(put.clone()).await.unwrap().record.id;
        store.delete("a", &id).await.unwrap();
        let (putter_store, again) = (store.clone(), put.clone());
        let putter = tokio::spawn(async move { putter_store.put(again).await.unwrap() });
        let (collector_store, hash) = (store.clone(), id.clone());
        let collector = tokio::spawn(async move {
            collector_store
                .remove_object_if_unreferenced(&hash, i64::MAX)
                .await
                .unwrap()
        });
        let (outcome, _) = (putter.await.unwrap(), collector.await.unwrap());
        assert!(outcome.created);
        assert!(store.object(&id).await.unwrap().is_some(), "round {round}");
        assert!(store.memories_without_object().await.unwrap().is_empty());
    }
}
