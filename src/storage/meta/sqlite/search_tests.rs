//! Tests of the SQLite search: an empty index, the first pass's three ways
//! out (crowded out, a tie at its cut, frames beyond it), and the index's
//! life beside the database (commits, restarts, a lost index, collection).

use super::super::SqliteMetaStore;
use crate::storage::meta::expression::{Expr, parse};
use crate::storage::meta::sql::search::FIRST_PASS_FRAMES;
use crate::storage::meta::{
    AdminStore, FrameBatch, IndexLag, ListQuery, MemoryStore, MetaStore, SearchIndex,
};

/// The expression every test here searches for.
fn zebra() -> Expr {
    parse("\"zebra\"").unwrap()
}

#[tokio::test]
async fn an_empty_index_answers_a_search_with_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("meta.db").display());
    let store = SqliteMetaStore::open(&url).await.unwrap();
    let filter = ListQuery {
        namespace: "n".into(),
        limit: 10,
        ..ListQuery::default()
    };
    assert!(store.search(&zebra(), &filter).await.unwrap().is_empty());
    assert_eq!(store.index_lag().await.unwrap(), IndexLag::default());
    put_raw(&store, &"ab".repeat(32), "n", b"zebra zebra\n").await;
    assert_eq!(store.index_lag().await.unwrap().objects, 1);
    let batch = FrameBatch {
        hash: "ab".repeat(32),
        frames: vec![crate::storage::meta::IndexedFrame {
            idx: 0,
            text: "zebra zebra".into(),
            lines: Default::default(),
        }],
        first: true,
        done: true,
    };
    store.index_frames(batch.clone()).await.unwrap();
    store.index_frames(batch).await.unwrap();
    // Added, not committed: still pending, but not handed out again.
    assert_eq!(store.index_lag().await.unwrap().objects, 1);
    assert!(store.search(&zebra(), &filter).await.unwrap().is_empty());
    assert!(store.search_pending(10).await.unwrap().is_empty());
    assert_eq!(store.index_lag().await.unwrap().objects, 0);
    let rows = store.search(&zebra(), &filter).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].frames, [0]);
    store.close().await;
}

/// Puts `data` raw as memory `hash` of `namespace` (not indexed yet).
async fn put_raw(store: &SqliteMetaStore, hash: &str, namespace: &str, data: &[u8]) {
    let object = crate::storage::meta::ObjectRecord {
        hash: hash.to_owned(),
        bytes: data.len() as u64,
        lines: 1,
        stored_bytes: data.len() as u64,
        layout: crate::storage::meta::Layout::Raw,
        data: Some(data.to_vec()),
        frames: Vec::new(),
    };
    store
        .put(crate::storage::meta::NewMemory {
            namespace: namespace.into(),
            fields: crate::storage::meta::MemoryFields::default(),
            tokens: 1,
            token_method: "x".into(),
            tokens_settling: false,
            summary: "s".into(),
            now: 1,
            object,
        })
        .await
        .unwrap();
}

/// A store holding each `(hash, namespace, frame texts)` as a memory of
/// that namespace, its frames indexed with those texts.
async fn store_with(
    objects: &[(String, &str, Vec<String>)],
) -> (tempfile::TempDir, SqliteMetaStore) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("meta.db").display());
    let store = SqliteMetaStore::open(&url).await.unwrap();
    for (hash, namespace, frames) in objects {
        put_raw(&store, hash, namespace, b"x").await;
        store
            .index_frames(FrameBatch::whole(hash, frames))
            .await
            .unwrap();
    }
    assert!(store.search_pending(1).await.unwrap().is_empty());
    (dir, store)
}

fn filter(namespace: &str, limit: u32) -> ListQuery {
    ListQuery {
        namespace: namespace.into(),
        limit,
        ..ListQuery::default()
    }
}

#[tokio::test]
async fn a_namespace_crowded_out_of_the_first_pass_still_gets_its_matches() {
    // More strong matches elsewhere than the first pass ranks.
    let mut objects: Vec<(String, &str, Vec<String>)> = (0..FIRST_PASS_FRAMES + 20)
        .map(|i| {
            (
                format!("{i:064x}"),
                "other",
                vec!["zebra zebra zebra".into()],
            )
        })
        .collect();
    objects.push((
        "f".repeat(64),
        "n",
        vec!["zebra and a long line of other words".into()],
    ));
    objects.push((
        "e".repeat(64),
        "n",
        vec!["one zebra among many more words here".into()],
    ));
    let (_dir, store) = store_with(&objects).await;
    let rows = store.search(&zebra(), &filter("n", 10)).await.unwrap();
    let ids: Vec<&str> = rows.iter().map(|r| r.record.id.as_str()).collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(
        ids.iter()
            .all(|id| id.starts_with('e') || id.starts_with('f'))
    );
    assert!(rows[0].score <= rows[1].score);
    store.close().await;
}

#[tokio::test]
async fn a_tie_across_the_first_pass_cut_is_broken_by_id_as_a_full_ranking_would() {
    // Identical frames score the same; stored highest id first, so a
    // pass that stopped at its cut would keep the wrong ones.
    let objects: Vec<(String, &str, Vec<String>)> = (0..FIRST_PASS_FRAMES + 50)
        .rev()
        .map(|i| (format!("{i:064x}"), "n", vec!["zebra crossing".into()]))
        .collect();
    let (_dir, store) = store_with(&objects).await;
    let rows = store.search(&zebra(), &filter("n", 3)).await.unwrap();
    let ids: Vec<String> = rows.iter().map(|r| r.record.id.clone()).collect();
    let expected: Vec<String> = (0..3).map(|i| format!("{i:064x}")).collect();
    assert_eq!(ids, expected);
    store.close().await;
}

#[tokio::test]
async fn a_memory_of_more_matching_frames_than_the_pass_reports_them_all() {
    let frames: Vec<String> = (0..FIRST_PASS_FRAMES + 30)
        .map(|i| format!("frame {i} zebra"))
        .collect();
    let objects = vec![
        ("a".repeat(64), "n", frames),
        ("b".repeat(64), "n", vec!["no match here".into()]),
    ];
    let (_dir, store) = store_with(&objects).await;
    let rows = store.search(&zebra(), &filter("n", 1)).await.unwrap();
    assert_eq!(rows.len(), 1);
    let mut frames = rows[0].frames.clone();
    assert_eq!(frames.len(), FIRST_PASS_FRAMES + 30);
    frames.sort_unstable();
    frames.dedup();
    assert_eq!(frames.len(), FIRST_PASS_FRAMES + 30);
    store.close().await;
}

#[tokio::test]
async fn the_index_survives_a_restart_and_a_lost_one_is_rebuilt() {
    let objects = vec![("a".repeat(64), "n", vec!["zebra crossing".to_owned()])];
    let (dir, store) = store_with(&objects).await;
    let url = format!("sqlite://{}", dir.path().join("meta.db").display());
    assert!(dir.path().join("meta.db-fulltext").is_dir());
    store.close().await;
    drop(store);

    let store = SqliteMetaStore::open(&url).await.unwrap();
    assert_eq!(store.index_lag().await.unwrap().objects, 0);
    let rows = store.search(&zebra(), &filter("n", 10)).await.unwrap();
    assert_eq!(rows.len(), 1, "found again without indexing again");
    store.close().await;
    drop(store);

    // An index lost (or a database from before it existed): every object
    // is queued again.
    std::fs::remove_dir_all(dir.path().join("meta.db-fulltext")).unwrap();
    let store = SqliteMetaStore::open(&url).await.unwrap();
    assert_eq!(store.index_lag().await.unwrap().objects, 1);
    let pending = store.search_pending(10).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].hash, "a".repeat(64));
    store.close().await;
}

#[tokio::test]
async fn an_object_indexed_again_is_found_once_and_a_collected_one_not_at_all() {
    let objects = vec![
        (
            "a".repeat(64),
            "n",
            vec!["zebra one".to_owned(), "zebra two".to_owned()],
        ),
        ("b".repeat(64), "n", vec!["zebra three".to_owned()]),
    ];
    let (_dir, store) = store_with(&objects).await;
    // A restart between the index's commit and the queue's update, say.
    store
        .index_frames(FrameBatch {
            hash: "a".repeat(64),
            frames: vec![crate::storage::meta::IndexedFrame {
                idx: 0,
                text: "zebra one".into(),
                lines: Default::default(),
            }],
            first: true,
            done: true,
        })
        .await
        .unwrap();
    assert!(store.search_pending(1).await.unwrap().is_empty());
    let rows = store.search(&zebra(), &filter("n", 10)).await.unwrap();
    let a = rows.iter().find(|r| r.record.id == "a".repeat(64)).unwrap();
    assert_eq!(a.frames, [0], "the earlier documents were replaced");

    assert_eq!(
        store
            .remove_memories("n", vec!["b".repeat(64)])
            .await
            .unwrap(),
        1
    );
    assert!(
        store
            .remove_object_if_unreferenced(&"b".repeat(64), i64::MAX)
            .await
            .unwrap()
    );
    // Deleted at the next commit, which the indexer's next look makes.
    tokio::time::sleep(crate::storage::meta::fulltext::COMMIT_EVERY).await;
    store.search_pending(1).await.unwrap();
    let fulltext = store.fulltext.clone();
    let expr = parse("\"three\"").unwrap();
    assert!(fulltext.top(&expr, 10).unwrap().0.is_empty());
    store.close().await;
}
