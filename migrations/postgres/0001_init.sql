-- The PostgreSQL schema, equal in meaning to migrations/sqlite/0001..0005 together:
-- the same tables and columns, with PostgreSQL types (BIGINT for SQLite's INTEGER,
-- BYTEA for BLOB, BOOLEAN for `pinned`) and the full-text index as tsvector rows.
-- Keys (hashes, ids, namespaces) compare bytewise (COLLATE "C"), as SQLite's
-- BINARY does: id prefix ranges and hash order must not depend on the locale.

-- Objects: one row per distinct content, shared by the memories of every namespace.
CREATE TABLE objects (
    hash         TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    bytes        BIGINT  NOT NULL,
    lines        BIGINT  NOT NULL,
    stored_bytes BIGINT  NOT NULL,
    layout       TEXT    NOT NULL CHECK (layout IN ('raw', 'inline', 'blob')),
    data         BYTEA,
    created_at   BIGINT  NOT NULL
);

-- Frame index of framed objects (see the SQLite migration 0001 for the page format).
CREATE TABLE frames (
    hash           TEXT COLLATE "C" NOT NULL,
    idx            BIGINT  NOT NULL,
    content_offset BIGINT  NOT NULL,
    content_len    BIGINT  NOT NULL,
    first_line     BIGINT  NOT NULL,
    stored_offset  BIGINT  NOT NULL,
    stored_len     BIGINT  NOT NULL,
    pages          BYTEA   NOT NULL,
    PRIMARY KEY (hash, idx)
);

-- Memories: a namespace's view of an object, with its descriptive fields.
CREATE TABLE memories (
    namespace        TEXT COLLATE "C" NOT NULL,
    id               TEXT COLLATE "C" NOT NULL,
    type             TEXT    NOT NULL,
    subtype          TEXT,
    mime             TEXT    NOT NULL,
    title            TEXT,
    thread           TEXT,
    checkpoint       TEXT,
    directory        TEXT,
    tokens           BIGINT  NOT NULL,
    token_method     TEXT    NOT NULL DEFAULT 'estimate:bytes/4',
    summary          TEXT    NOT NULL,
    created_at       BIGINT  NOT NULL,
    updated_at       BIGINT  NOT NULL,
    last_accessed_at BIGINT,
    access_count     BIGINT  NOT NULL DEFAULT 0,
    -- Never pruned nor expired.
    pinned           BOOLEAN NOT NULL DEFAULT FALSE,
    -- Unix ms after which the memory is invisible and swept (NULL: never).
    expires_at       BIGINT,
    -- Set by `verify` with repair when the memory's object failed its checks.
    corrupt          TEXT,
    PRIMARY KEY (namespace, id)
);
CREATE INDEX memories_by_time ON memories (namespace, created_at DESC, id DESC);
CREATE INDEX memories_by_object ON memories (id);
CREATE INDEX memories_by_thread ON memories (namespace, thread) WHERE thread IS NOT NULL;
CREATE INDEX memories_by_checkpoint ON memories (namespace, checkpoint) WHERE checkpoint IS NOT NULL;
CREATE INDEX memories_by_directory ON memories (namespace, directory) WHERE directory IS NOT NULL;
CREATE INDEX memories_by_expiry ON memories (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE memory_tags (
    namespace TEXT COLLATE "C" NOT NULL,
    id        TEXT COLLATE "C" NOT NULL,
    tag       TEXT NOT NULL,
    PRIMARY KEY (namespace, id, tag)
);
CREATE INDEX memory_tags_by_tag ON memory_tags (namespace, tag);

-- Per-namespace accounting (src/domain/ledger.rs); see the SQLite migration 0003.
CREATE TABLE ledger_counters (
    namespace TEXT COLLATE "C" NOT NULL,
    name      TEXT             NOT NULL,
    value     BIGINT           NOT NULL DEFAULT 0,
    cost_usd  DOUBLE PRECISION NOT NULL DEFAULT 0,
    PRIMARY KEY (namespace, name)
);

CREATE TABLE ledger_usage (
    namespace     TEXT COLLATE "C" NOT NULL,
    model         TEXT             NOT NULL,
    day           TEXT             NOT NULL,
    input_tokens  BIGINT           NOT NULL DEFAULT 0,
    output_tokens BIGINT           NOT NULL DEFAULT 0,
    cost_usd      DOUBLE PRECISION NOT NULL DEFAULT 0,
    reports       BIGINT           NOT NULL DEFAULT 0,
    PRIMARY KEY (namespace, model, day)
);
CREATE INDEX ledger_usage_by_day ON ledger_usage (day);

CREATE TABLE ledger_calibration (
    namespace  TEXT COLLATE "C" NOT NULL,
    model      TEXT             NOT NULL,
    factor     DOUBLE PRECISION NOT NULL,
    samples    BIGINT           NOT NULL,
    updated_at BIGINT           NOT NULL,
    PRIMARY KEY (namespace, model)
);

-- Full-text search. A frame indexed is one row here (so it is never indexed twice)...
CREATE TABLE search_frames (
    hash TEXT COLLATE "C" NOT NULL,
    idx  BIGINT NOT NULL,
    PRIMARY KEY (hash, idx)
);

-- ...and its text as tsvectors of at most ~32 KiB of text each: PostgreSQL clamps
-- word positions at 16383 and a tsvector at 1 MB, frames hold up to 512 KiB.
CREATE TABLE search_parts (
    hash TEXT COLLATE "C" NOT NULL,
    idx  BIGINT   NOT NULL,
    part INTEGER  NOT NULL,
    body TSVECTOR NOT NULL,
    PRIMARY KEY (hash, idx, part)
);
CREATE INDEX search_parts_body ON search_parts USING GIN (body);

-- Objects waiting for the background indexer; persisted, so work survives a restart.
CREATE TABLE search_pending (
    hash      TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    bytes     BIGINT NOT NULL,
    queued_at BIGINT NOT NULL
);
CREATE INDEX search_pending_by_age ON search_pending (queued_at, hash);

-- Every new object is queued for indexing in the transaction that stores it.
CREATE FUNCTION search_queue_new_object() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO search_pending (hash, bytes, queued_at)
    VALUES (NEW.hash, NEW.bytes, NEW.created_at) ON CONFLICT (hash) DO NOTHING;
    RETURN NULL;
END;
$$;
CREATE TRIGGER search_queue_new_object AFTER INSERT ON objects
    FOR EACH ROW EXECUTE FUNCTION search_queue_new_object();

-- An object that goes (garbage collection) takes its index rows with it.
CREATE FUNCTION search_forget_object() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM search_parts WHERE hash = OLD.hash;
    DELETE FROM search_frames WHERE hash = OLD.hash;
    DELETE FROM search_pending WHERE hash = OLD.hash;
    RETURN NULL;
END;
$$;
CREATE TRIGGER search_forget_object AFTER DELETE ON objects
    FOR EACH ROW EXECUTE FUNCTION search_forget_object();

-- When an object last lost a memory (Unix ms): GC's grace period counts from
-- the later of this and the object's `created_at`.
CREATE TABLE object_releases (
    hash        TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    released_at BIGINT NOT NULL
);
CREATE FUNCTION memories_release_object() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO object_releases (hash, released_at)
    VALUES (OLD.id, (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT)
    ON CONFLICT (hash) DO UPDATE SET released_at = excluded.released_at;
    RETURN NULL;
END;
$$;
CREATE TRIGGER memories_release_object AFTER DELETE ON memories
    FOR EACH ROW EXECUTE FUNCTION memories_release_object();
