//! Puts, reads, listings and deletes of memories and objects.

use std::sync::Arc;

use super::super::{FrameEntry, Layout, ListQuery, MetaStore, NewMemory, PageEntry, SettledTokens};
use super::{list_query, raw_put};

/// Racing puts of one content make one memory and one object.
pub(in crate::storage::meta) async fn identical_concurrent_puts_create_one_memory_and_one_object(
    store: Arc<dyn MetaStore>,
) {
    let put = raw_put("a", "same content", 1);
    let tasks: Vec<_> = (0..32)
        .map(|_| {
            let (store, put) = (store.clone(), put.clone());
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
    let other = store.put(raw_put("b", "same content", 2)).await.unwrap();
    assert!(other.created && !other.object_created);
    assert_eq!(store.store_totals().await.unwrap().objects, 1);
}

/// A put of stored content merges its fields; the expiry follows the last put.
pub(in crate::storage::meta) async fn a_second_put_merges_its_fields_into_the_memory(
    store: Arc<dyn MetaStore>,
) {
    let mut first = raw_put("a", "content", 1_000);
    first.fields.title = Some("first".into());
    first.fields.tags = vec!["x".into()];
    first.fields.ttl_seconds = Some(10);
    let created = store.put(first.clone()).await.unwrap();
    assert_eq!(created.record.expires_at, Some(11_000));
    let mut second = raw_put("a", "content", 2_000);
    second.fields.title = Some("second".into());
    second.fields.thread = Some("t1".into());
    second.fields.tags = vec!["y".into(), "x".into()];
    second.fields.pinned = true;
    second.fields.ttl_seconds = Some(100);
    let merged = store.put(second).await.unwrap();
    assert!(!merged.created && !merged.object_created);
    let r = merged.record;
    assert_eq!(r.fields.title.as_deref(), Some("first"));
    assert_eq!(r.fields.thread.as_deref(), Some("t1"));
    assert_eq!(r.fields.tags, ["x", "y"]);
    assert!(r.fields.pinned);
    assert_eq!((r.created_at, r.updated_at), (1_000, 2_000));
    assert_eq!(r.expires_at, Some(102_000));
    // A put without a time to live makes it never expire.
    let r = store.put(raw_put("a", "content", 3_000)).await.unwrap();
    assert_eq!(r.record.expires_at, None);
}

/// An exact count settled after the put replaces the estimate of that
/// namespace's memory, once, and nothing else.
pub(in crate::storage::meta) async fn a_settled_count_replaces_the_estimate_of_that_memory_only(
    store: Arc<dyn MetaStore>,
) {
    let put = raw_put("a", "content", 1_000);
    let id = store.put(put.clone()).await.unwrap().record.id;
    store.put(raw_put("b", "content", 1_000)).await.unwrap();
    let settled = SettledTokens {
        namespace: "a".into(),
        id: id.clone(),
        estimated_method: put.token_method.clone(),
        tokens: 2,
        token_method: "exact:o200k_base".into(),
        summary: "s, exactly".into(),
    };
    assert!(store.settle_tokens(settled.clone()).await.unwrap());
    let got = store.get("a", &id).await.unwrap().unwrap();
    assert_eq!(
        (got.tokens, got.token_method.as_str()),
        (2, "exact:o200k_base")
    );
    assert_eq!(got.summary, "s, exactly");
    // The other namespace's memory of the same content keeps its estimate.
    let other = store.get("b", &id).await.unwrap().unwrap();
    assert_eq!(
        (other.tokens, other.token_method.as_str()),
        (3, "estimate:bytes/4")
    );
    // Settled once: a count that is no longer the estimate is left alone,
    // and a memory that is not there is no memory settled.
    let again = SettledTokens {
        tokens: 9,
        ..settled.clone()
    };
    assert!(!store.settle_tokens(again).await.unwrap());
    assert_eq!(store.get("a", &id).await.unwrap().unwrap().tokens, 2);
    let gone = SettledTokens {
        namespace: "c".into(),
        ..settled
    };
    assert!(!store.settle_tokens(gone).await.unwrap());
}

/// A memory put with its count settling says so and is listed (in pages,
/// across namespaces) until its count settles; a second put of the same
/// content leaves the mark as it is; of two settles, one wins.
pub(in crate::storage::meta) async fn memories_marked_settling_are_listed_until_settled_once(
    store: Arc<dyn MetaStore>,
) {
    let marked = |namespace: &str, content: &str| NewMemory {
        tokens_settling: true,
        ..raw_put(namespace, content, 1_000)
    };
    let put = store.put(marked("b", "one")).await.unwrap().record;
    assert!(put.tokens_settling);
    let two = store.put(marked("a", "two")).await.unwrap().record.id;
    let one = put.id;
    store.put(raw_put("a", "not marked", 1_000)).await.unwrap();
    // Again, unmarked: the memory keeps its mark.
    let again = store.put(raw_put("b", "one", 2_000)).await.unwrap();
    assert!(!again.created);
    assert!(store.get("b", &one).await.unwrap().unwrap().tokens_settling);

    let listed = |after: Option<(String, String)>, limit| {
        let store = store.clone();
        async move {
            let page = store.settling(after, limit).await.unwrap();
            page.into_iter()
                .map(|m| (m.namespace, m.id))
                .collect::<Vec<_>>()
        }
    };
    let all = listed(None, 10).await;
    assert_eq!(all, [("a".into(), two.clone()), ("b".into(), one.clone())]);
    let first = listed(None, 1).await;
    assert_eq!(first, all[..1]);
    assert_eq!(listed(first.last().cloned(), 10).await, all[1..]);

    // Settled: not marked any more.
    let settled = SettledTokens {
        namespace: "a".into(),
        id: two.clone(),
        estimated_method: "estimate:bytes/4".into(),
        tokens: 1,
        token_method: "exact:o200k_base".into(),
        summary: "s".into(),
    };
    assert!(store.settle_tokens(settled).await.unwrap());
    let got = store.get("a", &two).await.unwrap().unwrap();
    assert!(!got.tokens_settling);
    assert_eq!(got.tokens, 1);
    // Not text after all: the estimate stands and only the mark goes, once.
    let stands = SettledTokens {
        namespace: "b".into(),
        id: one.clone(),
        estimated_method: "estimate:bytes/4".into(),
        tokens: 3,
        token_method: "estimate:bytes/4".into(),
        summary: "s".into(),
    };
    assert!(store.settle_tokens(stands.clone()).await.unwrap());
    assert!(!store.settle_tokens(stands).await.unwrap());
    let got = store.get("b", &one).await.unwrap().unwrap();
    assert!(!got.tokens_settling);
    assert_eq!(got.token_method, "estimate:bytes/4");
    assert!(listed(None, 10).await.is_empty());
}

/// Listing by fields and time, paging, prefixes, deletes, totals.
pub(in crate::storage::meta) async fn list_filters_pages_and_prefix_lookup(
    store: Arc<dyn MetaStore>,
) {
    let mut ids = Vec::new();
    for i in 0..5 {
        let mut put = raw_put("a", &format!("content {i}"), 100 + i);
        put.fields.thread = Some(if i % 2 == 0 { "even" } else { "odd" }.into());
        put.fields.tags = vec![format!("tag{}", i % 3)];
        ids.push(store.put(put).await.unwrap().record.id);
    }
    store.put(raw_put("b", "content 0", 5)).await.unwrap();
    let all = store.list(&list_query("a")).await.unwrap();
    let created: Vec<i64> = all.iter().map(|r| r.created_at).collect();
    assert_eq!(created, [104, 103, 102, 101, 100]);
    let even = ListQuery {
        thread: Some("even".into()),
        ..list_query("a")
    };
    assert_eq!(store.list(&even).await.unwrap().len(), 3);
    let tagged = ListQuery {
        tag: Some("tag1".into()),
        ..list_query("a")
    };
    let tagged = store.list(&tagged).await.unwrap();
    assert_eq!(tagged.len(), 2);
    assert!(tagged.iter().all(|r| r.fields.tags == ["tag1"]));
    let window = ListQuery {
        since: Some(101),
        until: Some(104),
        ..list_query("a")
    };
    assert_eq!(store.list(&window).await.unwrap().len(), 3);
    let first = ListQuery {
        limit: 2,
        ..list_query("a")
    };
    let page = store.list(&first).await.unwrap();
    assert_eq!(page.len(), 2);
    let last = page.last().unwrap();
    let next = ListQuery {
        after: Some((last.created_at, last.id.clone())),
        ..first
    };
    let page2 = store.list(&next).await.unwrap();
    assert_eq!(page2[0].created_at, 102);
    let prefix = &ids[0][..6];
    assert_eq!(
        store.ids_with_prefix("a", prefix, 10).await.unwrap(),
        [ids[0].clone()]
    );
    assert!(
        store
            .ids_with_prefix("c", prefix, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.get("a", &ids[0]).await.unwrap().is_some());
    assert!(store.delete("a", &ids[0]).await.unwrap());
    assert!(!store.delete("a", &ids[0]).await.unwrap());
    assert!(store.get("a", &ids[0]).await.unwrap().is_none());
    assert!(store.get("b", &ids[0]).await.unwrap().is_some());
    let totals = store.namespace_totals("a").await.unwrap();
    assert_eq!(totals.memories, 4);
    assert_eq!(store.namespaces().await.unwrap(), ["a", "b"]);
}

/// A memory past its expiry is gone from get, list and prefix lookup at
/// once, before retention deletes it; a pinned one never expires.
pub(in crate::storage::meta) async fn expired_memories_are_gone_from_every_read_unless_pinned(
    store: Arc<dyn MetaStore>,
) {
    let now = crate::clock::now_ms();
    // Put 10 s ago with 1 s to live: expired 9 s ago.
    let mut expired = raw_put("a", "expired long ago", now - 10_000);
    expired.fields.ttl_seconds = Some(1);
    let expired = store.put(expired).await.unwrap().record.id;
    let mut pinned = raw_put("a", "pinned and old", now - 10_000);
    pinned.fields.ttl_seconds = Some(1);
    pinned.fields.pinned = true;
    let pinned = store.put(pinned).await.unwrap().record.id;
    let mut alive = raw_put("a", "alive for an hour", now);
    alive.fields.ttl_seconds = Some(3_600);
    let alive = store.put(alive).await.unwrap().record.id;
    assert!(store.get("a", &expired).await.unwrap().is_none());
    assert!(store.get("a", &pinned).await.unwrap().is_some());
    assert!(store.get("a", &alive).await.unwrap().is_some());
    let mut listed: Vec<String> = store
        .list(&list_query("a"))
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    listed.sort();
    let mut visible = vec![pinned.clone(), alive.clone()];
    visible.sort();
    assert_eq!(listed, visible);
    assert!(
        store
            .ids_with_prefix("a", &expired[..8], 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.ids_with_prefix("a", &pinned[..8], 10).await.unwrap(),
        [pinned]
    );
}

/// Reads, deletes and listings of one namespace never touch another's,
/// even for the same content.
pub(in crate::storage::meta) async fn namespaces_never_see_each_others_memories(
    store: Arc<dyn MetaStore>,
) {
    let mine = store.put(raw_put("mine", "shared text", 1)).await.unwrap();
    let id = mine.record.id.clone();
    assert!(store.get("theirs", &id).await.unwrap().is_none());
    assert!(store.list(&list_query("theirs")).await.unwrap().is_empty());
    assert!(
        store
            .ids_with_prefix("theirs", &id[..4], 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(!store.delete("theirs", &id).await.unwrap());
    let mut theirs = raw_put("theirs", "shared text", 2);
    theirs.fields.title = Some("their title".into());
    theirs.fields.tags = vec!["t".into()];
    store.put(theirs).await.unwrap();
    let mine = store.get("mine", &id).await.unwrap().unwrap();
    assert_eq!(mine.fields.title, None, "their fields stay theirs");
    assert!(mine.fields.tags.is_empty());
    let tagged = ListQuery {
        tag: Some("t".into()),
        ..list_query("mine")
    };
    assert!(store.list(&tagged).await.unwrap().is_empty());
    assert!(store.delete("theirs", &id).await.unwrap());
    assert!(store.get("mine", &id).await.unwrap().is_some());
    assert!(store.object(&id).await.unwrap().is_some());
    assert_eq!(store.namespace_totals("theirs").await.unwrap().memories, 0);
    assert_eq!(store.namespace_totals("mine").await.unwrap().memories, 1);
}

/// A framed object reads back with its frame index and pages.
pub(in crate::storage::meta) async fn framed_objects_keep_their_frame_index(
    store: Arc<dyn MetaStore>,
) {
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
    store.put(put.clone()).await.unwrap();
    let object = store.object(&put.object.hash).await.unwrap().unwrap();
    assert_eq!(object.frames, put.object.frames);
    assert_eq!(object.layout, Layout::Blob);
}

/// A put answers the memory as a get reads it back (tags sorted, once
/// each), whether it created the memory or merged into it.
pub(in crate::storage::meta) async fn a_put_answers_the_memory_as_a_get_reads_it(
    store: Arc<dyn MetaStore>,
) {
    let mut put = raw_put("a", "tagged content", 5);
    put.fields.tags = vec!["b".into(), "a".into(), "b".into()];
    put.fields.title = Some("title".into());
    let created = store.put(put.clone()).await.unwrap();
    assert!(created.created && created.object_created);
    let read = store.get("a", &created.record.id).await.unwrap().unwrap();
    assert_eq!(created.record.fields, read.fields);
    assert_eq!(read.fields.tags, ["a", "b"]);
    assert_eq!(
        (
            created.record.bytes,
            created.record.lines,
            created.record.tokens
        ),
        (read.bytes, read.lines, read.tokens)
    );
    // Another namespace over the stored object, and a merge: the same again.
    put.namespace = "b".into();
    let shared = store.put(put.clone()).await.unwrap();
    assert!(shared.created && !shared.object_created);
    assert_eq!(shared.record.fields.tags, ["a", "b"]);
    put.fields.tags = vec!["c".into()];
    let merged = store.put(put).await.unwrap();
    let read = store.get("b", &merged.record.id).await.unwrap().unwrap();
    assert_eq!(merged.record.fields, read.fields);
    assert_eq!(read.fields.tags, ["a", "b", "c"]);
}
