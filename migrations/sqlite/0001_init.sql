-- Objects: one row per distinct content, shared by the memories of every namespace.
CREATE TABLE objects (
    hash         TEXT    NOT NULL PRIMARY KEY,
    bytes        INTEGER NOT NULL,
    lines        INTEGER NOT NULL,
    stored_bytes INTEGER NOT NULL,
    layout       TEXT    NOT NULL CHECK (layout IN ('raw', 'inline', 'blob')),
    data         BLOB,
    created_at   INTEGER NOT NULL
);

-- Frame index of framed objects: content offset and first line of every zstd frame,
-- and per 64 KiB page of the frame's content its CRC-32 and newline count (8 bytes
-- a page), so a slice can decode and verify only the front of a frame.
CREATE TABLE frames (
    hash           TEXT    NOT NULL,
    idx            INTEGER NOT NULL,
    content_offset INTEGER NOT NULL,
    content_len    INTEGER NOT NULL,
    first_line     INTEGER NOT NULL,
    stored_offset  INTEGER NOT NULL,
    stored_len     INTEGER NOT NULL,
    pages          BLOB    NOT NULL,
    PRIMARY KEY (hash, idx)
) WITHOUT ROWID;

-- Memories: a namespace's view of an object, with its descriptive fields.
CREATE TABLE memories (
    namespace        TEXT    NOT NULL,
    id               TEXT    NOT NULL,
    type             TEXT    NOT NULL,
    subtype          TEXT,
    mime             TEXT    NOT NULL,
    title            TEXT,
    thread           TEXT,
    checkpoint       TEXT,
    directory        TEXT,
    tokens           INTEGER NOT NULL,
    summary          TEXT    NOT NULL,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    last_accessed_at INTEGER,
    access_count     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (namespace, id)
);
CREATE INDEX memories_by_time ON memories (namespace, created_at DESC, id DESC);
CREATE INDEX memories_by_object ON memories (id);
CREATE INDEX memories_by_thread ON memories (namespace, thread) WHERE thread IS NOT NULL;
CREATE INDEX memories_by_checkpoint ON memories (namespace, checkpoint) WHERE checkpoint IS NOT NULL;
CREATE INDEX memories_by_directory ON memories (namespace, directory) WHERE directory IS NOT NULL;

CREATE TABLE memory_tags (
    namespace TEXT NOT NULL,
    id        TEXT NOT NULL,
    tag       TEXT NOT NULL,
    PRIMARY KEY (namespace, id, tag)
) WITHOUT ROWID;
CREATE INDEX memory_tags_by_tag ON memory_tags (namespace, tag);
