-- The full-text index moved out of SQLite, into a tantivy index in a directory
-- beside the database (`<database>-fulltext`): FTS5 had to score every match
-- before it could rank, tantivy stops early (block-max WAND). The store queues
-- every object again when it creates that directory.
DROP TRIGGER search_forget_object;
DROP TABLE search_fts;
DROP TABLE search_frames;

-- A collected object leaves the queue; its documents leave the index with it.
CREATE TRIGGER search_forget_object AFTER DELETE ON objects
BEGIN
    DELETE FROM search_pending WHERE hash = OLD.hash;
END;
