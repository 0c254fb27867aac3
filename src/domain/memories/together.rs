//! Puts that commit together: the metadata of a proxied request's pieces
//! waits until every piece of the request is stored, so that the store's
//! writer takes them as one batch (SQLite: one transaction, one fsync)
//! rather than in the two or three batches that pieces finishing a few
//! hundred microseconds apart made, each commit waiting for the one before.
//!
//! Each put holds a [`Pass`]; it arrives (waits for the others) just before
//! its metadata write, or leaves at once — by dropping the pass — when it
//! fails, needs no put, or holds an object's lock (a blob: it commits at
//! once, for a put waiting with a lock could wait on another holding the
//! lock it needs).

use std::sync::Arc;

use tokio::sync::watch;

/// One put's place among puts that commit together.
pub struct Pass {
    /// Puts that have neither arrived nor left.
    remaining: Arc<watch::Sender<usize>>,
    /// Whether this one has been counted off.
    gone: bool,
}

/// `n` passes for `n` puts that run at the same time (all must run at once:
/// one that waits for a put not yet started would wait for ever).
pub fn passes(n: usize) -> Vec<Pass> {
    let remaining = Arc::new(watch::Sender::new(n));
    (0..n)
        .map(|_| Pass {
            remaining: remaining.clone(),
            gone: false,
        })
        .collect()
}

impl Pass {
    /// Waits until every other put has arrived or left.
    pub async fn arrive(mut self) {
        let mut open = self.remaining.subscribe();
        self.leave();
        // The sender lives in `self` too, so the wait ends only at zero.
        let _ = open.wait_for(|remaining| *remaining == 0).await;
    }

    fn leave(&mut self) {
        if !std::mem::replace(&mut self.gone, true) {
            self.remaining.send_modify(|n| *n = n.saturating_sub(1));
        }
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        self.leave();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn arrivals_wait_for_the_last_and_a_dropped_pass_counts_as_gone() {
        let mut passes = passes(3);
        let (c, b, a) = (passes.remove(2), passes.remove(1), passes.remove(0));
        let first = tokio::spawn(a.arrive());
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!first.is_finished(), "it waited for nobody");
        drop(b); // a put that failed or needed no wait
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!first.is_finished(), "one is still to come");
        c.arrive().await;
        tokio::time::timeout(Duration::from_secs(5), first)
            .await
            .expect("the first put was let go")
            .unwrap();
    }
}
