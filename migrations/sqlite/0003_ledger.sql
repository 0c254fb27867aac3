-- Per-namespace accounting (src/domain/ledger.rs). Counters are added to in batches.

-- Running totals by name: `tokens_saved.put`, `tokens_saved.compress` (with the cost
-- they saved), `governor.normal|warn|pointer_only`, `puts`, `puts.new`, `bytes_put`,
-- `bytes_put.new`.
CREATE TABLE ledger_counters (
    namespace TEXT    NOT NULL,
    name      TEXT    NOT NULL,
    value     INTEGER NOT NULL DEFAULT 0,
    cost_usd  REAL    NOT NULL DEFAULT 0,
    PRIMARY KEY (namespace, name)
) WITHOUT ROWID;

-- Provider-reported usage per namespace, model and UTC day (`YYYY-MM-DD`).
CREATE TABLE ledger_usage (
    namespace     TEXT    NOT NULL,
    model         TEXT    NOT NULL,
    day           TEXT    NOT NULL,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd      REAL    NOT NULL DEFAULT 0,
    reports       INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (namespace, model, day)
) WITHOUT ROWID;
CREATE INDEX ledger_usage_by_day ON ledger_usage (day);

-- Learned ratio of reported to estimated input tokens per namespace and model.
CREATE TABLE ledger_calibration (
    namespace  TEXT    NOT NULL,
    model      TEXT    NOT NULL,
    factor     REAL    NOT NULL,
    samples    INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (namespace, model)
) WITHOUT ROWID;
