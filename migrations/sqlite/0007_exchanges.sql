-- The exchange ledger (src/domain/ledger/exchanges): one row per proxied
-- request. What the model saw is stored as a delta against the thread's
-- previous exchange (`parent`): its first `prefix` bytes, then `body`, then its
-- last `suffix` bytes — a conversation's bodies share their beginning
-- (history) and end (tools), so storage grows with what each request added.
CREATE TABLE exchanges (
    id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    thread TEXT NOT NULL,
    api TEXT NOT NULL,
    model TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    status INTEGER NOT NULL,
    parent TEXT,
    prefix INTEGER NOT NULL,
    suffix INTEGER NOT NULL,
    body BLOB NOT NULL,
    figures TEXT NOT NULL
);
CREATE INDEX exchanges_by_namespace ON exchanges (namespace, id);
CREATE INDEX exchanges_by_thread ON exchanges (namespace, thread, id);
CREATE INDEX exchanges_by_time ON exchanges (at_ms);
