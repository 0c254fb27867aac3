-- `/metrics` reads the store's totals (objects, content bytes, stored bytes)
-- at every scrape. Over the table itself that read scans every object row;
-- this index holds the three figures alone, so the totals can be read from
-- it (an index-only scan once the table is vacuumed).
CREATE INDEX objects_sizes ON objects (bytes, stored_bytes);
