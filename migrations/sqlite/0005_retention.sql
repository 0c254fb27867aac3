-- Retention (src/domain/retention.rs), GC (src/domain/gc.rs) and verify (src/domain/verify.rs).

-- Pinned memories are never pruned nor expired.
ALTER TABLE memories ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
-- Unix ms after which the memory is invisible and swept (NULL: never).
ALTER TABLE memories ADD COLUMN expires_at INTEGER;
-- Set by `verify` with repair when the memory's object failed its checks.
ALTER TABLE memories ADD COLUMN corrupt TEXT;
CREATE INDEX memories_by_expiry ON memories (expires_at) WHERE expires_at IS NOT NULL;

-- When an object last lost a memory (Unix ms): GC's grace period counts from
-- the later of this and the object's `created_at`. A table of its own, so that
-- the objects table keeps its columns.
CREATE TABLE object_releases (
    hash        TEXT    NOT NULL PRIMARY KEY,
    released_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER memories_release_object AFTER DELETE ON memories
BEGIN
    INSERT INTO object_releases (hash, released_at)
    VALUES (OLD.id, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
    ON CONFLICT (hash) DO UPDATE SET released_at = excluded.released_at;
END;
