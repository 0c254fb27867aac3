//! PostgreSQL store tests (filled below).
