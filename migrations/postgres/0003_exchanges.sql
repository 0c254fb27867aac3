-- The exchange ledger; see the SQLite migration 0007.
CREATE TABLE exchanges (
    id TEXT COLLATE "C" PRIMARY KEY,
    namespace TEXT COLLATE "C" NOT NULL,
    thread TEXT COLLATE "C" NOT NULL,
    api TEXT NOT NULL,
    model TEXT NOT NULL,
    at_ms BIGINT NOT NULL,
    status BIGINT NOT NULL,
    parent TEXT COLLATE "C",
    prefix BIGINT NOT NULL,
    suffix BIGINT NOT NULL,
    body BYTEA NOT NULL,
    figures TEXT NOT NULL
);
CREATE INDEX exchanges_by_namespace ON exchanges (namespace, id);
CREATE INDEX exchanges_by_thread ON exchanges (namespace, thread, id);
CREATE INDEX exchanges_by_time ON exchanges (at_ms);
