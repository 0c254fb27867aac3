//! API tests: the real router, in-process, over temp data directories.

mod helpers;
