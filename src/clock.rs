//! The wall clock as every layer reads it: Unix milliseconds (a leaf module,
//! so storage and the domain both use it without depending on each other).

/// Now, in Unix milliseconds.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}
