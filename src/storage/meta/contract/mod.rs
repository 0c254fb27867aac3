//! The metadata store's contract: one suite of tests that every backend
//! passes alike. Each backend's tests open a fresh store and name
//! [`contract_suite!`] once; SQLite runs it always, PostgreSQL when
//! `CAIRN_TEST_DATABASE_URL` names a server (failed instead of skipped when
//! `CI` is set). What only one backend does (PostgreSQL's leases and schema
//! in the URL, SQLite's first search pass) is tested beside that backend.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::{Layout, ListQuery, MemoryFields, MetaStore, NewMemory, ObjectRecord};

pub(super) mod admin;
pub(super) mod ledger;
pub(super) mod memories;
pub(super) mod search;

/// A store under test, and what to do when its test is over.
pub(in crate::storage::meta) struct Subject {
    /// The store, as the application holds it.
    pub(in crate::storage::meta) store: Arc<dyn MetaStore>,
    /// Run after the store is closed: removes what the test left behind.
    cleanup: Pin<Box<dyn Future<Output = ()> + Send>>,
}

impl Subject {
    /// `store`, with `cleanup` to run once it is closed.
    pub(in crate::storage::meta) fn new(
        store: Arc<dyn MetaStore>,
        cleanup: impl Future<Output = ()> + Send + 'static,
    ) -> Self {
        Self {
            store,
            cleanup: Box::pin(cleanup),
        }
    }

    /// Closes the store and cleans up.
    pub(in crate::storage::meta) async fn finish(self) {
        self.store.close().await;
        self.cleanup.await;
    }
}

/// One `#[tokio::test]` per contract test, each on a store `$open` makes
/// (an `async fn() -> Option<Subject>`; `None` skips the test).
macro_rules! contract_suite {
    ($open:path) => {
        $crate::storage::meta::contract::contract_suite!(
            @each $open,
            memories::identical_concurrent_puts_create_one_memory_and_one_object,
            memories::a_second_put_merges_its_fields_into_the_memory,
            memories::a_settled_count_replaces_the_estimate_of_that_memory_only,
            memories::memories_marked_settling_are_listed_until_settled_once,
            memories::a_put_answers_the_memory_as_a_get_reads_it,
            memories::list_filters_pages_and_prefix_lookup,
            memories::expired_memories_are_gone_from_every_read_unless_pinned,
            memories::namespaces_never_see_each_others_memories,
            memories::framed_objects_keep_their_frame_index,
            admin::retention_sees_every_memory_and_never_removes_pinned_ones,
            admin::verify_helpers_page_objects_and_mark_corruption,
            admin::gc_removes_only_objects_no_memory_refers_to,
            admin::a_put_racing_a_collection_never_loses_its_object,
            ledger::the_ledger_adds_up_and_sets_calibrations,
            ledger::exchanges_list_page_filter_and_expire_by_thread,
            ledger::totals_count_memories_per_namespace_and_objects_once,
            ledger::import_restores_once_with_the_archived_metadata,
            search::search_matches_phrases_prefixes_and_not_within_the_namespace,
            search::search_spans_a_large_frame_and_ranks_frames,
            search::search_keeps_to_the_filters_and_the_limit,
        );
    };
    (@each $open:path, $($module:ident :: $name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some(subject) = $open().await else { return };
                $crate::storage::meta::contract::$module::$name(subject.store.clone()).await;
                subject.finish().await;
            }
        )*
    };
}
pub(in crate::storage::meta) use contract_suite;

/// The memory id of `content`.
pub(in crate::storage::meta) fn hash_of(content: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(content))
}

/// A put of `content` kept raw (inline, unframed) in `namespace` at `now`.
pub(in crate::storage::meta) fn raw_put(namespace: &str, content: &str, now: i64) -> NewMemory {
    NewMemory {
        namespace: namespace.into(),
        fields: MemoryFields {
            kind: "TOOL_OUTPUT".into(),
            mime: "text/plain".into(),
            ..MemoryFields::default()
        },
        tokens: 3,
        token_method: "estimate:bytes/4".into(),
        tokens_settling: false,
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

/// A listing of `namespace`, 100 at a time.
pub(in crate::storage::meta) fn list_query(namespace: &str) -> ListQuery {
    ListQuery {
        namespace: namespace.into(),
        limit: 100,
        ..ListQuery::default()
    }
}
