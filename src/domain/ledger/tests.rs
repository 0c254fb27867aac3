//! The ledger over a real SQLite store, with a clock the tests move.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::storage::meta::MetaStore;
use crate::storage::meta::sqlite::SqliteMetaStore;

struct ManualClock(Mutex<DateTime<Utc>>);

impl ManualClock {
    fn at(text: &str) -> Arc<Self> {
        Arc::new(Self(Mutex::new(
            DateTime::parse_from_rfc3339(text).unwrap().to_utc(),
        )))
    }

    fn set(&self, text: &str) {
        *self.0.lock().unwrap() = DateTime::parse_from_rfc3339(text).unwrap().to_utc();
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap()
    }
}

async fn store(dir: &tempfile::TempDir) -> Arc<dyn MetaStore> {
    let url = format!("sqlite://{}", dir.path().join("meta.sqlite").display());
    Arc::new(SqliteMetaStore::open(&url).await.unwrap())
}

fn config(budgets: &str) -> LedgerConfig {
    LedgerConfig {
        pricing: Pricing::default(),
        budgets: Budgets::parse(None, None, Some(budgets)).unwrap(),
    }
}

fn report(model: &str, input: i64, output: i64, estimated: Option<i64>) -> UsageReport {
    UsageReport::parse(model, input, output, estimated).unwrap()
}

#[tokio::test]
async fn calibration_corrects_estimates_and_leaves_exact_counts_alone() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::at("2026-05-01T10:00:00Z");
    let ledger = Ledger::open(store(&dir).await, config(""), clock)
        .await
        .unwrap();
    let claude = Counter::for_model(Some("claude-sonnet-4-5"));
    let before = ledger
        .calibrate("a", Some("claude-sonnet-4-5"), claude, 1000)
        .await;
    assert_eq!(before.tokens, 1000);
    assert_eq!(before.method, claude.method());

    for (reported, estimated) in [(1100, 1000), (1300, 1000)] {
        ledger
            .record_usage(
                "a",
                &report("claude-sonnet-4-5", reported, 10, Some(estimated)),
            )
            .await
            .unwrap();
    }
    let after = ledger
        .calibrate("a", Some("Claude-Sonnet-4-5"), claude, 1000)
        .await;
    assert_eq!(after.tokens, 1200);
    assert_eq!(
        after.method,
        format!("{};calibrated:x1.20", claude.method())
    );
    // Another namespace has learned nothing.
    let other = ledger
        .calibrate("b", Some("claude-sonnet-4-5"), claude, 1000)
        .await;
    assert_eq!(other.tokens, 1000);

    // A factor learned for an exactly counted model is never applied to exact counts.
    ledger
        .record_usage("a", &report("gpt-4o", 1500, 10, Some(1000)))
        .await
        .unwrap();
    let exact = Counter::for_model(Some("gpt-4o"));
    let counted = ledger.calibrate("a", Some("gpt-4o"), exact, 1000).await;
    assert_eq!(counted.tokens, 1000);
    assert_eq!(counted.method, "exact:o200k_base");
}

#[tokio::test]
async fn a_spent_budget_refuses_until_the_next_utc_day() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::at("2026-05-01T23:00:00Z");
    let ledger = Ledger::open(store(&dir).await, config("a:tokens=1000"), clock.clone())
        .await
        .unwrap();
    let first = ledger
        .record_usage("a", &report("gpt-4o", 600, 100, None))
        .await
        .unwrap();
    assert_eq!(first.today.tokens, 700);
    ledger.check_budget("a").await.unwrap();

    let err = ledger
        .record_usage("a", &report("gpt-4o", 300, 100, None))
        .await
        .unwrap_err();
    let DomainError::BudgetExceeded {
        budget,
        limit,
        spent,
        resets_at,
        retry_after_secs,
        ..
    } = err
    else {
        panic!("{err:?}");
    };
    assert_eq!((budget, limit, spent), ("tokens", 1000.0, 1100.0));
    assert_eq!(resets_at.to_rfc3339(), "2026-05-02T00:00:00+00:00");
    assert_eq!(retry_after_secs, 3600);
    assert!(ledger.check_budget("a").await.is_err());
    // Budgets are per namespace: `b` has none.
    ledger.check_budget("b").await.unwrap();

    clock.set("2026-05-02T00:00:01Z");
    ledger.check_budget("a").await.unwrap();
    let next = ledger
        .record_usage("a", &report("gpt-4o", 10, 0, None))
        .await
        .unwrap();
    assert_eq!(next.today.tokens, 10);
}

#[tokio::test]
async fn today_spend_and_calibrations_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::at("2026-05-01T12:00:00Z");
    let meta = store(&dir).await;
    let ledger = Ledger::open(meta.clone(), config("a:cost=0.01"), clock.clone())
        .await
        .unwrap();
    // gpt-4o: 2,000 input tokens at $2.50/M = $0.005.
    let recorded = ledger
        .record_usage("a", &report("gpt-4o", 2000, 0, Some(1000)))
        .await
        .unwrap();
    assert!((recorded.cost_usd - 0.005).abs() < 1e-12);
    ledger.flush().await.unwrap();
    drop(ledger);

    let reopened = Ledger::open(meta.clone(), config("a:cost=0.01"), clock.clone())
        .await
        .unwrap();
    let err = reopened
        .record_usage("a", &report("gpt-4o", 2000, 0, None))
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        DomainError::BudgetExceeded {
            budget: "cost_usd",
            ..
        }
    ));
    let gemini = Counter::for_model(Some("gemini-2.5-flash"));
    reopened
        .record_usage("a", &report("gemini-2.5-flash", 300, 0, Some(100)))
        .await
        .unwrap_err(); // recorded, then refused: the budget is spent
    let calibrated = reopened
        .calibrate("a", Some("gemini-2.5-flash"), gemini, 100)
        .await;
    assert_eq!(calibrated.tokens, 300);
    reopened.flush().await.unwrap();
    let stats = reopened.stats("a").await.unwrap();
    assert_eq!(stats.usage_today.reports, 3);
    assert_eq!(stats.usage_today.input_tokens, 4300);
    let models: Vec<_> = stats.calibrations.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(models, ["gemini-2.5-flash", "gpt-4o"]);

    // A later day starts from nothing.
    clock.set("2026-05-02T08:00:00Z");
    let next_day = Ledger::open(meta, config("a:cost=0.01"), clock)
        .await
        .unwrap();
    next_day.check_budget("a").await.unwrap();
    let stats = next_day.stats("a").await.unwrap();
    assert_eq!(stats.usage_today, UsageTotals::default());
    assert_eq!(stats.usage_all_time.input_tokens, 4300);
}

#[tokio::test]
async fn savings_are_priced_at_the_input_price() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::at("2026-05-01T12:00:00Z");
    let ledger = Ledger::open(store(&dir).await, config(""), clock)
        .await
        .unwrap();
    // No model: the default, gpt-4o at $2.50/M input.
    ledger
        .record_saving("a", SavingSource::Put, "TOOL_OUTPUT", None, 1_000_000)
        .await
        .unwrap();
    // claude-opus-4-1 at $15/M input.
    ledger
        .record_saving(
            "a",
            SavingSource::Compress,
            "CONTEXT",
            Some("claude-opus-4-1"),
            200_000,
        )
        .await
        .unwrap();
    ledger.record_governor("a", "warn").await.unwrap();
    ledger.record_governor("a", "warn").await.unwrap();
    assert!(ledger.record_governor("a", "panic").await.is_err());
    let stats = ledger.stats("a").await.unwrap();
    assert_eq!(stats.tokens_saved["put"], 1_000_000);
    assert_eq!(stats.tokens_saved["compress"], 200_000);
    assert!(
        (stats.cost_saved_usd - 5.5).abs() < 1e-9,
        "{}",
        stats.cost_saved_usd
    );
    assert_eq!(stats.governor["warn"], 2);
    assert_eq!(stats.governor["normal"], 0);
    let empty = ledger.stats("b").await.unwrap();
    assert_eq!(empty.tokens_saved["put"], 0);
    assert_eq!(empty.cost_saved_usd, 0.0);
}

#[test]
fn usage_reports_are_validated() {
    assert!(UsageReport::parse("gpt-4o", -1, 0, None).is_err());
    assert!(UsageReport::parse("gpt-4o", 0, -5, None).is_err());
    assert!(UsageReport::parse("gpt-4o", MAX_REPORT_TOKENS + 1, 0, None).is_err());
    assert!(UsageReport::parse("gpt-4o", 10, 0, Some(0)).is_err());
    assert!(UsageReport::parse("  ", 10, 0, None).is_err());
    assert!(UsageReport::parse(&"x".repeat(200), 10, 0, None).is_err());
    assert!(UsageReport::parse("gpt\n4o", 10, 0, None).is_err());
    let ok = UsageReport::parse(" OpenAI/GPT-4o ", 10, 2, Some(9)).unwrap();
    assert_eq!(ok.model, "gpt-4o");
}
