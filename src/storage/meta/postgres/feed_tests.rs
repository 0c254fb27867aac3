//! How a replica's index follows the shared objects ([`super::feed`]): a
//! running transaction holds back what commits after it, a second replica
//! indexes what the first stored, a restart goes on from the index's last
//! commit, an index of another store is emptied. On the harness of
//! [`super::tests`].

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;

use super::PgMetaStore;
use super::tests::{TestStore, test_store};
use crate::storage::meta::contract::{hash_of, list_query, raw_put};
use crate::storage::meta::expression::parse;
use crate::storage::meta::{FrameBatch, MetaStore, SearchIndex};

/// Runs `store`'s indexer as the domain's does, each object handed out
/// indexed whole from `texts` (by hash), until nothing is handed out and,
/// with `settle`, nothing is left behind (other tests' transactions on the
/// same server hold objects back for a moment). Answers the hashes
/// indexed, in order.
async fn run_indexer(
    store: &dyn MetaStore,
    texts: &HashMap<String, String>,
    settle: bool,
) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut indexed = Vec::new();
    loop {
        let pending = store.search_pending(2).await.unwrap();
        if pending.is_empty() {
            let behind = store.index_lag().await.unwrap().objects;
            if !settle || behind == 0 || std::time::Instant::now() > deadline {
                return indexed;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        for object in pending {
            let text = texts.get(&object.hash).expect("a known object");
            let batch = FrameBatch::whole(&object.hash, &[text]);
            store.index_frames(batch).await.unwrap();
            indexed.push(object.hash);
        }
    }
}

/// [`run_indexer`] until it has caught up.
async fn index_all(store: &dyn MetaStore, texts: &HashMap<String, String>) -> Vec<String> {
    run_indexer(store, texts, true).await
}

/// Puts `text` in namespace `a` and records it in `texts`.
async fn put(store: &dyn MetaStore, texts: &mut HashMap<String, String>, text: &str) -> String {
    let id = store.put(raw_put("a", text, 1)).await.unwrap().record.id;
    texts.insert(id.clone(), text.to_owned());
    id
}

/// Ids of the memories of `a` matching `fts`, sorted.
async fn found(store: &dyn MetaStore, fts: &str) -> Vec<String> {
    let mut ids: Vec<String> = store
        .search(&parse(fts).unwrap(), &list_query("a"))
        .await
        .unwrap()
        .into_iter()
        .map(|row| row.record.id)
        .collect();
    ids.sort();
    ids
}

/// Another store on the same schema: another replica.
async fn replica(t: &TestStore, index_dir: Option<&std::path::Path>) -> PgMetaStore {
    PgMetaStore::open_with(
        t.options.clone().options([("search_path", &t.schema)]),
        index_dir,
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn an_object_of_a_running_transaction_holds_back_those_stored_after_it() {
    let Some(t) = test_store().await else { return };
    let store: &dyn MetaStore = t.store.as_ref();
    let mut texts = HashMap::new();
    let before = put(store, &mut texts, "stored before").await;
    assert_eq!(
        index_all(store, &texts).await,
        std::slice::from_ref(&before)
    );

    // Another replica's put, still running: its row is not visible yet.
    let pool = t.pool().await;
    let mut running = pool.begin().await.unwrap();
    let held = hash_of(b"held back");
    sqlx::query(
        "INSERT INTO objects (hash, bytes, lines, stored_bytes, layout, data, created_at) \
         VALUES ($1, 9, 1, 9, 'raw', $2, 1)",
    )
    .bind(&held)
    .bind(b"held back".to_vec())
    .execute(&mut *running)
    .await
    .unwrap();
    texts.insert(held.clone(), "held back".into());
    let after = put(store, &mut texts, "stored after").await;
    assert!(
        run_indexer(store, &texts, false).await.is_empty(),
        "an object committed after a running transaction began waits for it"
    );
    assert_eq!(
        store.index_lag().await.unwrap().objects,
        1,
        "the one committed"
    );

    running.commit().await.unwrap();
    assert_eq!(index_all(store, &texts).await, [held, after]);
    assert_eq!(store.index_lag().await.unwrap().objects, 0);
    assert_eq!(found(store, r#""stored""#).await.len(), 2);
    t.finish().await;
}

/// Transaction ids are numbers: ids of different lengths (99999 and 100000)
/// must come in numeric order, or the place jumps over what sorts after
/// them as text.
#[tokio::test]
async fn objects_come_in_the_numeric_order_of_their_transactions() {
    let Some(t) = test_store().await else { return };
    let store: &dyn MetaStore = t.store.as_ref();
    let pool = t.pool().await;
    let now: String = sqlx::query_scalar("SELECT pg_current_xact_id()::text")
        .fetch_one(&pool)
        .await
        .unwrap();
    let now: u64 = now.parse().unwrap();
    // The highest power of ten with room below the current transaction:
    // every row gets an id of an ended transaction, on either side of it.
    let mut ten = 10u64;
    while ten * 10 + 10 < now {
        ten *= 10;
    }
    assert!(ten + 10 < now, "transaction ids start in the hundreds");
    let mut texts = HashMap::new();
    let mut expected = Vec::new();
    for seq in ten - 5..ten + 5 {
        let text = format!("numbered {seq}");
        let hash = hash_of(text.as_bytes());
        sqlx::query(
            "INSERT INTO objects (hash, bytes, lines, stored_bytes, layout, data, created_at, seq) \
             VALUES ($1, $2, 1, $2, 'raw', $3, 1, $4::text::xid8)",
        )
        .bind(&hash)
        .bind(i64::try_from(text.len()).unwrap())
        .bind(text.as_bytes().to_vec())
        .bind(seq.to_string())
        .execute(&pool)
        .await
        .unwrap();
        texts.insert(hash.clone(), text);
        expected.push(hash);
    }
    assert_eq!(store.index_lag().await.unwrap().objects, 10);
    assert_eq!(
        index_all(store, &texts).await,
        expected,
        "each object once, in numeric order of the transaction ids"
    );
    assert_eq!(store.index_lag().await.unwrap().objects, 0);
    t.finish().await;
}

#[tokio::test]
async fn a_second_replica_indexes_and_finds_what_the_first_stored() {
    let Some(t) = test_store().await else { return };
    let first: &dyn MetaStore = t.store.as_ref();
    let second = replica(&t, None).await;
    let mut texts = HashMap::new();
    let id = put(first, &mut texts, "a zebra crossing").await;
    index_all(first, &texts).await;
    assert_eq!(found(first, r#""zebra""#).await, std::slice::from_ref(&id));

    assert!(
        found(&second, r#""zebra""#).await.is_empty(),
        "not indexed there yet"
    );
    assert_eq!(second.index_lag().await.unwrap().objects, 1);
    assert_eq!(index_all(&second, &texts).await, std::slice::from_ref(&id));
    assert_eq!(
        found(&second, r#""zebra""#).await,
        std::slice::from_ref(&id)
    );
    assert_eq!(second.index_lag().await.unwrap().objects, 0);
    // Grep's prefilter trusts an index only for what it holds.
    let words = ["zebra".to_owned()];
    assert_eq!(
        second
            .frame_words(&id, &words)
            .await
            .unwrap()
            .unwrap()
            .len(),
        1
    );
    second.close().await;
    t.finish().await;
}

#[tokio::test]
async fn a_restarted_replica_goes_on_from_its_last_commit_and_another_store_starts_afresh() {
    let Some(t) = test_store().await else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut texts = HashMap::new();
    let replica_one = replica(&t, Some(dir.path())).await;
    let first = put(&replica_one, &mut texts, "first okapi").await;
    assert_eq!(
        index_all(&replica_one, &texts).await,
        std::slice::from_ref(&first)
    );
    replica_one.close().await;
    drop(replica_one); // lets go of the index's lock

    let second = put(t.store.as_ref(), &mut texts, "second okapi").await;
    let again = replica(&t, Some(dir.path())).await;
    assert_eq!(
        found(&again, r#""okapi""#).await,
        std::slice::from_ref(&first)
    );
    assert_eq!(again.index_lag().await.unwrap().objects, 1);
    assert_eq!(
        index_all(&again, &texts).await,
        std::slice::from_ref(&second),
        "only what the last commit did not hold"
    );
    let mut both = vec![first.clone(), second];
    both.sort();
    assert_eq!(found(&again, r#""okapi""#).await, both);
    again.close().await;
    drop(again);

    // The same directory on another store (schema): built again from that store.
    let Some(other) = test_store().await else {
        return;
    };
    let elsewhere = replica(&other, Some(dir.path())).await;
    put(&elsewhere, &mut texts, "first okapi").await; // the same content, not indexed here
    assert!(found(&elsewhere, r#""okapi""#).await.is_empty());
    assert_eq!(elsewhere.index_lag().await.unwrap().objects, 1);
    assert_eq!(
        index_all(&elsewhere, &texts).await,
        std::slice::from_ref(&first)
    );
    assert_eq!(found(&elsewhere, r#""okapi""#).await, [first]);
    elsewhere.close().await;
    other.finish().await;
    t.finish().await;
}

#[tokio::test]
async fn every_object_of_racing_puts_is_indexed_while_they_go_on() {
    let Some(t) = test_store().await else { return };
    let store: std::sync::Arc<dyn MetaStore> = t.store.clone();
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut texts = HashMap::new();
                for n in 0..150 {
                    put(store.as_ref(), &mut texts, &format!("word{w}x{n} racing")).await;
                }
                texts
            })
        })
        .collect();
    // The indexer, meanwhile: each object handed out is indexed from its
    // row's own content (the test cannot know it before the put answers).
    let indexer = {
        let store = store.clone();
        tokio::spawn(async move {
            let mut indexed = Vec::new();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while indexed.len() < 1200 && std::time::Instant::now() < deadline {
                let pending = store.search_pending(16).await.unwrap();
                if pending.is_empty() {
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
                for object in pending {
                    let record = store.object(&object.hash).await.unwrap().unwrap();
                    let text = String::from_utf8(record.data.clone().unwrap()).unwrap();
                    store
                        .index_frames(FrameBatch::whole(&object.hash, &[text]))
                        .await
                        .unwrap();
                    indexed.push(object.hash);
                }
            }
            indexed
        })
    };
    let mut texts = HashMap::new();
    for writer in writers {
        texts.extend(writer.await.unwrap());
    }
    let indexed = indexer.await.unwrap();
    let mut seen = std::collections::HashSet::new();
    assert!(
        indexed.iter().all(|h| seen.insert(h)),
        "an object handed out twice"
    );
    assert_eq!(indexed.len(), texts.len(), "every object handed out");
    // The indexer's next look: nothing left, and what it added is committed.
    assert!(store.search_pending(16).await.unwrap().is_empty());
    for (id, text) in &texts {
        let word = text.split(' ').next().unwrap();
        assert_eq!(
            found(store.as_ref(), &format!("\"{word}\"")).await,
            std::slice::from_ref(id)
        );
    }
    t.finish().await;
}
