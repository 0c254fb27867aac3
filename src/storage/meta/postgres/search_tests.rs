//! What only the PostgreSQL store does: a large frame indexed in parts,
//! and object leases (which GC and puts of other replicas take); on the
//! harness of [`super::tests`]. Search and GC as both stores have them are
//! in the metadata contract ([`crate::storage::meta::contract`]).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::PgMetaStore;
use super::tests::test_store;
use crate::storage::meta::contract::{hash_of, list_query, raw_put};
use crate::storage::meta::{
    FrameBatch, IndexedFrame, MemoryStore, MetaStore, ObjectStore, SearchIndex,
};

#[tokio::test]
async fn a_large_frame_is_indexed_in_parts_and_matches_as_a_whole() {
    let Some(t) = test_store().await else { return };
    let filler = "lorem ipsum dolor sit amet\n".repeat(4_000); // ~108 KB: several parts
    let big = format!("alphaword at the start\n{filler}omegaword at the end\n");
    let id = t.store.put(raw_put("a", &big, 1)).await.unwrap().record.id;
    let batch = FrameBatch {
        hash: id,
        frames: vec![IndexedFrame {
            idx: 0,
            text: big,
            lines: Default::default(),
        }],
        first: true,
        done: true,
    };
    t.store.index_frames(batch).await.unwrap();
    let parts: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM search_parts WHERE idx = 0")
        .fetch_one(&t.pool().await)
        .await
        .unwrap();
    assert!(parts > 3, "{parts} parts");
    let both = t
        .store
        .search(r#""alphaword" "omegaword""#, &list_query("a"))
        .await
        .unwrap();
    assert_eq!(both.len(), 1);
    assert_eq!(both[0].frames, [0]);
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
