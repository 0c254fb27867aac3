-- Full-text search moves out of PostgreSQL: each replica keeps its own
-- tantivy index in its data directory, fed from `objects` in commit order
-- (src/storage/meta/postgres/feed.rs). The tsvector rows, their queue and
-- the triggers that kept them go.
--
-- `seq` is the id of the transaction that stored the object. A replica
-- reads objects with `seq` below the oldest transaction still running
-- (`pg_snapshot_xmin`), in (`seq`, `hash`) order, and keeps its place in its
-- index's commit: no object a running transaction will commit is passed.
-- Rows stored before this migration all get the migration's own id.
ALTER TABLE objects ADD COLUMN seq XID8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX objects_by_seq ON objects (seq, hash);

-- Names this store, so a replica's index built from another database (or
-- schema) is recognised and built again.
CREATE TABLE store_identity (
    id UUID NOT NULL PRIMARY KEY DEFAULT gen_random_uuid()
);
INSERT INTO store_identity DEFAULT VALUES;

DROP TRIGGER search_queue_new_object ON objects;
DROP FUNCTION search_queue_new_object();
DROP TRIGGER search_forget_object ON objects;
DROP FUNCTION search_forget_object();
DROP TABLE search_parts;
DROP TABLE search_frames;
DROP TABLE search_pending;
