//! The ledger's counters, usage and calibrations; size totals; import.

use std::sync::Arc;

use super::super::{
    CalibrationRow, ExchangeQuery, ExchangeRow, ImportedMemory, LedgerBatch, LedgerCounter,
    MetaStore, UsageQuery, UsageRow,
};
use super::raw_put;

/// Counters and usage add up across batches; calibrations are set.
pub(in crate::storage::meta) async fn the_ledger_adds_up_and_sets_calibrations(
    store: Arc<dyn MetaStore>,
) {
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
        ..LedgerBatch::default()
    };
    store.write_ledger(batch.clone()).await.unwrap();
    let mut later = batch.clone();
    later.usage[0].day = "2026-01-02".into();
    later.calibrations[0].factor = 2.0;
    store.write_ledger(later).await.unwrap();
    let counters = store.ledger_counters("a").await.unwrap();
    assert_eq!(counters.len(), 1);
    assert_eq!(counters[0].value, 10);
    assert!((counters[0].cost_usd - 1.5).abs() < 1e-9);
    let usage = store.usage_totals(&UsageQuery::default()).await.unwrap();
    assert_eq!(usage.len(), 1);
    assert_eq!((usage[0].input_tokens, usage[0].reports), (20, 2));
    assert_eq!(usage[0].day, "2026-01-02");
    let one_day = UsageQuery {
        namespace: Some("a".into()),
        day: Some("2026-01-01".into()),
    };
    assert_eq!(
        store.usage_totals(&one_day).await.unwrap()[0].input_tokens,
        10
    );
    let calibrations = store.calibrations(Some("a")).await.unwrap();
    assert_eq!(calibrations.len(), 1);
    assert!((calibrations[0].factor - 2.0).abs() < 1e-9);
    assert!(store.calibrations(Some("b")).await.unwrap().is_empty());
}

/// A namespace's totals count its memories; the store's count each object
/// once, however many namespaces hold it.
pub(in crate::storage::meta) async fn totals_count_memories_per_namespace_and_objects_once(
    store: Arc<dyn MetaStore>,
) {
    let empty = store.store_totals().await.unwrap();
    assert_eq!((empty.objects, empty.bytes, empty.stored_bytes), (0, 0, 0));
    let a = store.namespace_totals("a").await.unwrap();
    assert_eq!((a.memories, a.bytes, a.tokens), (0, 0, 0));
    store.put(raw_put("a", "12345", 1)).await.unwrap();
    store.put(raw_put("a", "1234567890", 1)).await.unwrap();
    store.put(raw_put("b", "12345", 1)).await.unwrap();
    let a = store.namespace_totals("a").await.unwrap();
    assert_eq!(
        (a.memories, a.bytes, a.stored_bytes, a.tokens),
        (2, 15, 15, 6)
    );
    let b = store.namespace_totals("b").await.unwrap();
    assert_eq!((b.memories, b.bytes), (1, 5));
    let all = store.store_totals().await.unwrap();
    assert_eq!((all.objects, all.bytes, all.stored_bytes), (2, 15, 15));
    assert_eq!(store.namespaces().await.unwrap(), ["a", "b"]);
}

/// An archived memory is restored once, with its original times and counts.
pub(in crate::storage::meta) async fn import_restores_once_with_the_archived_metadata(
    store: Arc<dyn MetaStore>,
) {
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
    assert!(store.import_memory(memory.clone()).await.unwrap());
    assert!(!store.import_memory(memory).await.unwrap());
    let r = store.get("a", &put.object.hash).await.unwrap().unwrap();
    assert_eq!((r.created_at, r.updated_at), (100, 200));
    assert_eq!(
        (r.last_accessed_at, r.access_count, r.tokens),
        (Some(300), 4, 7)
    );
}

fn exchange(id: &str, namespace: &str, thread: &str, at_ms: i64) -> ExchangeRow {
    ExchangeRow {
        id: id.into(),
        namespace: namespace.into(),
        thread: thread.into(),
        api: "messages".into(),
        model: if at_ms % 2 == 0 { "even" } else { "odd" }.into(),
        at_ms,
        status: 200,
        parent: None,
        prefix: 0,
        suffix: 0,
        body: format!("{{\"n\":{at_ms}}}").into_bytes(),
        figures: "{}".into(),
    }
}

/// Exchanges list newest first within their namespace, filter, page by id,
/// chain by thread, and expire whole threads.
pub(in crate::storage::meta) async fn exchanges_list_page_filter_and_expire_by_thread(
    store: Arc<dyn MetaStore>,
) {
    let mut rows = vec![
        exchange("ex_01", "a", "t1", 1),
        exchange("ex_02", "a", "t2", 2),
        exchange("ex_03", "a", "t1", 3),
        exchange("ex_04", "b", "t1", 4),
        exchange("ex_05", "a", "t1", 50),
    ];
    rows[2].parent = Some("ex_01".into());
    rows[2].prefix = 3;
    let batch = LedgerBatch {
        exchanges: rows.clone(),
        ..LedgerBatch::default()
    };
    store.write_ledger(batch.clone()).await.unwrap();
    // Written twice (a retried flush): still once.
    store.write_ledger(batch).await.unwrap();
    let query =
        |thread: Option<&str>, model: Option<&str>, before: Option<&str>, limit| ExchangeQuery {
            namespace: "a".into(),
            thread: thread.map(Into::into),
            model: model.map(Into::into),
            since_ms: None,
            until_ms: None,
            before: before.map(Into::into),
            limit,
        };
    let ids = |rows: Vec<ExchangeRow>| rows.into_iter().map(|r| r.id).collect::<Vec<_>>();
    let all = store.exchanges(&query(None, None, None, 10)).await.unwrap();
    assert!(
        all.iter().all(|r| r.body.is_empty()),
        "lists leave bodies out"
    );
    assert_eq!(ids(all), ["ex_05", "ex_03", "ex_02", "ex_01"]);
    let page = store
        .exchanges(&query(None, None, Some("ex_03"), 1))
        .await
        .unwrap();
    assert_eq!(ids(page), ["ex_02"]);
    let t1 = store
        .exchanges(&query(Some("t1"), Some("odd"), None, 10))
        .await
        .unwrap();
    assert_eq!(ids(t1), ["ex_03", "ex_01"]);
    let mut window = query(None, None, None, 10);
    window.since_ms = Some(2);
    window.until_ms = Some(50);
    assert_eq!(
        ids(store.exchanges(&window).await.unwrap()),
        ["ex_03", "ex_02"]
    );
    let one = store.exchange("a", "ex_03").await.unwrap().unwrap();
    assert_eq!(one, rows[2]);
    assert!(store.exchange("b", "ex_03").await.unwrap().is_none());
    let chain = store.thread_exchanges("a", "t1", "ex_03").await.unwrap();
    assert_eq!(chain, vec![rows[0].clone(), rows[2].clone()]);
    // t1 of `a` has an exchange at 50: it stays whole; t2 and b's t1 go.
    let expire = LedgerBatch {
        expire_exchanges_before: Some(10),
        ..LedgerBatch::default()
    };
    store.write_ledger(expire).await.unwrap();
    let left = store.exchanges(&query(None, None, None, 10)).await.unwrap();
    assert_eq!(ids(left), ["ex_05", "ex_03", "ex_01"]);
    assert!(store.exchange("b", "ex_04").await.unwrap().is_none());
}
