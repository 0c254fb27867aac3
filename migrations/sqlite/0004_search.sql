-- Full-text search: one FTS5 row per frame of an object (raw content is one frame).
-- Objects are indexed once, whatever number of namespaces share them; a search joins
-- through the caller's memories, so rows of objects no memory of theirs uses never show.

-- The frame each FTS row stands for (its rowid is the FTS rowid).
CREATE TABLE search_frames (
    rowid INTEGER PRIMARY KEY,
    hash  TEXT    NOT NULL,
    idx   INTEGER NOT NULL,
    UNIQUE (hash, idx)
);

-- Contentless: the text lives in the objects; rows can still be deleted.
CREATE VIRTUAL TABLE search_fts USING fts5(
    body,
    content = '',
    contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 2'
);

-- Objects waiting for the background indexer; persisted, so work survives a restart.
CREATE TABLE search_pending (
    hash     TEXT    NOT NULL PRIMARY KEY,
    bytes    INTEGER NOT NULL,
    queued_at INTEGER NOT NULL
);

-- Every new object is queued for indexing in the transaction that stores it.
CREATE TRIGGER search_queue_new_object AFTER INSERT ON objects
BEGIN
    INSERT INTO search_pending (hash, bytes, queued_at)
    VALUES (NEW.hash, NEW.bytes, NEW.created_at) ON CONFLICT (hash) DO NOTHING;
END;

-- An object that goes (garbage collection) takes its index rows with it.
CREATE TRIGGER search_forget_object AFTER DELETE ON objects
BEGIN
    DELETE FROM search_fts WHERE rowid IN (SELECT rowid FROM search_frames WHERE hash = OLD.hash);
    DELETE FROM search_frames WHERE hash = OLD.hash;
    DELETE FROM search_pending WHERE hash = OLD.hash;
END;

-- Objects stored before search existed are indexed too.
INSERT INTO search_pending (hash, bytes, queued_at) SELECT hash, bytes, created_at FROM objects;
