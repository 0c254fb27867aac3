//! Locks that order a put's handling of an object's file against GC's
//! removal of the same object (the reasoning is in
//! [`crate::domain::maintenance::gc`]): a stripe in this process, and the
//! store's lease across replicas.

use std::sync::Arc;

use tokio::sync::{Mutex, OwnedMutexGuard};

use crate::domain::DomainError;
use crate::storage::meta::{MetaStore, ObjectLease};

/// Stripes of per-object locks between puts and GC.
const STRIPES: usize = 256;

/// Locks that order a put's file handling against GC's removal of the same object.
pub struct ObjectLocks {
    stripes: Vec<Arc<Mutex<()>>>,
}

/// A held object lock (and the store's lease, when it has one); released when dropped.
pub struct ObjectGuard {
    // Field order is drop order: the lease goes before the local stripe, so
    // the next put of this process finds it released or being released.
    _lease: Option<ObjectLease>,
    _stripe: OwnedMutexGuard<()>,
}

impl Default for ObjectLocks {
    fn default() -> Self {
        Self {
            stripes: (0..STRIPES).map(|_| Arc::new(Mutex::new(()))).collect(),
        }
    }
}

impl ObjectLocks {
    /// Waits for the lock of the object `hash` in this process, then for the
    /// store's lease of it across processes (when `meta` has leases).
    pub async fn lock(&self, meta: &dyn MetaStore, hash: &str) -> Result<ObjectGuard, DomainError> {
        let stripe = hash
            .get(..2)
            .and_then(|h| usize::from_str_radix(h, 16).ok())
            .unwrap_or(0)
            % STRIPES;
        let stripe = self.stripes[stripe].clone().lock_owned().await;
        let lease = meta.lease_object(hash).await?;
        Ok(ObjectGuard {
            _lease: lease,
            _stripe: stripe,
        })
    }
}
