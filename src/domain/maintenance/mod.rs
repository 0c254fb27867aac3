//! Keeping a store healthy: prune and expiry, garbage collection of
//! unreferenced objects, integrity verification.

pub mod gc;
pub mod retention;
pub mod verify;
