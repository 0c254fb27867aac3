-- A large put answers with the bytes/4 estimate while its exact count is
-- made after the answer. Until the count is in, the memory says so; and a
-- process that stops before it is in leaves the mark, so that the next start
-- counts the memory instead of leaving the estimate for good. The index
-- holds the few memories marked at any time.
ALTER TABLE memories ADD COLUMN tokens_settling BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX memories_settling ON memories (namespace, id) WHERE tokens_settling = TRUE;
