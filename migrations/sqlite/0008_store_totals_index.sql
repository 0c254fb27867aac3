-- `/metrics` reads the store's totals (objects, content bytes, stored bytes)
-- at every scrape. Over the table itself that read scans every object row,
-- frame index and inline content included (~4 KB a row): 24 ms at 5,800
-- objects and growing with the store, with the page cache churned each time.
-- This index holds the three figures alone, so the totals are read from it.
CREATE INDEX objects_sizes ON objects (bytes, stored_bytes);
