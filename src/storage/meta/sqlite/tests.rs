//! The metadata contract on SQLite, each test on a fresh database file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use super::SqliteMetaStore;
use crate::storage::meta::contract::{Subject, contract_suite};

/// A fresh store in a temporary directory, removed when the test is over.
async fn open() -> Option<Subject> {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("meta.db").display());
    let store = SqliteMetaStore::open(&url).await.unwrap();
    Some(Subject::new(Arc::new(store), async move { drop(dir) }))
}

contract_suite!(open);
