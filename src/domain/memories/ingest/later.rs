//! Exact counts left for after a put's answer: a large content's put answers
//! with the bytes/4 estimate as soon as the content is durable, and its
//! exact count follows on a thread of its own below the requests' priority,
//! so that none of the put's CPU goes to counting before the answer (the
//! memory is then set to the exact figure,
//! [`crate::domain::memories::Memories::put_answering_first`]).
//!
//! The contents those counts still hold are bounded: a put that would take
//! more than [`LATER_BYTES`] of them counts before answering, as small puts
//! always do.

use std::sync::{Arc, LazyLock, mpsc};

use bytes::Bytes;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

use crate::domain::tokens::stream::{ContentTokens, content_tokens};

/// Content bytes whose counts may wait after their puts answered.
const LATER_BYTES: usize = 64 << 20;

/// [`LATER_BYTES`] in KiB, the room's unit.
const LATER_BYTES_KIB: u32 = (LATER_BYTES >> 10) as u32;

/// The counting thread's niceness: it takes what the requests leave.
const NICENESS: i32 = 10;

/// Which puts count after answering, and room for their contents.
#[derive(Clone, Debug)]
pub struct CountLater {
    /// Contents over this size are counted after the answer.
    over: u64,
    /// KiB of content held by counts waiting or under way.
    room: Arc<Semaphore>,
}

/// The exact count of a put that answered first (the estimate when the
/// content turned out not to be text); an error when the count was lost.
pub type Later = oneshot::Receiver<ContentTokens>;

/// A content to count after its put answers, with the room it holds.
pub struct Pending {
    frames: Vec<Bytes>,
    digest: [u8; 32],
    max: u64,
    room: OwnedSemaphorePermit,
}

/// A pending count and where its answer goes.
struct Job {
    pending: Pending,
    answer: oneshot::Sender<ContentTokens>,
}

/// The counting thread, started at the first count after an answer.
static COUNTER: LazyLock<Option<mpsc::Sender<Job>>> = LazyLock::new(|| {
    let (jobs, queue) = mpsc::channel::<Job>();
    let started = std::thread::Builder::new()
        .name("cairn-counts".into())
        .spawn(move || {
            // Linux: a thread's niceness is its own.
            if let Err(e) = rustix::process::setpriority_process(None, NICENESS) {
                tracing::debug!(error = %e, "the counting thread keeps the usual priority");
            }
            for Job { pending, answer } in queue {
                let _ = answer.send(pending.count());
            }
        });
    match started {
        Ok(_) => Some(jobs),
        Err(e) => {
            tracing::error!(error = %e, "could not start the counting thread: counts after answers run on the blocking pool");
            None
        }
    }
});

impl CountLater {
    /// Contents over `over` bytes are counted after the answer.
    pub fn new(over: u64) -> Self {
        Self {
            over,
            room: Arc::new(Semaphore::new(LATER_BYTES_KIB as usize)),
        }
    }

    /// Contents over this size are counted after the answer (when there is room).
    pub(super) fn over(&self) -> u64 {
        self.over
    }

    /// Room for counting `frames` (of `bytes` in all, at most `max`) after
    /// the answer, if their content is over the size and there is room.
    pub(super) fn reserve(
        &self,
        frames: &[Bytes],
        bytes: u64,
        digest: [u8; 32],
        max: u64,
    ) -> Option<Pending> {
        if bytes <= self.over {
            return None;
        }
        let kib = u32::try_from(bytes.div_ceil(1024)).ok()?;
        let room = self.room.clone().try_acquire_many_owned(kib).ok()?;
        Some(Pending {
            frames: frames.to_vec(),
            digest,
            max,
            room,
        })
    }

    /// Room for counting `frames` (of `bytes` in all, at most `max`),
    /// waited for: for the counts a stopped process left to make
    /// ([`crate::domain::memories::Memories::settle_left_over`]).
    pub async fn wait_for_room(
        &self,
        frames: Vec<Bytes>,
        bytes: u64,
        digest: [u8; 32],
        max: u64,
    ) -> Option<Pending> {
        // Never more than all the room: a larger content waits for all of it.
        let kib = u32::try_from(bytes.div_ceil(1024))
            .unwrap_or(u32::MAX)
            .min(LATER_BYTES_KIB);
        let room = self.room.clone().acquire_many_owned(kib).await.ok()?;
        Some(Pending {
            frames,
            digest,
            max,
            room,
        })
    }
}

impl Pending {
    /// Starts the count: on the counting thread, below the requests.
    pub fn start(self) -> Later {
        let (answer, later) = oneshot::channel();
        let job = Job {
            pending: self,
            answer,
        };
        match COUNTER.as_ref() {
            Some(counter) => {
                if let Err(mpsc::SendError(job)) = counter.send(job) {
                    tokio::task::spawn_blocking(move || job.answer.send(job.pending.count()));
                }
            }
            None => {
                tokio::task::spawn_blocking(move || job.answer.send(job.pending.count()));
            }
        }
        later
    }

    /// The count; the room goes back before it is answered.
    fn count(self) -> ContentTokens {
        let tokens = content_tokens(&self.frames, Some(self.digest), self.max);
        drop(self.room);
        tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::tokens::stream::CONTENT_ENCODING;

    #[tokio::test]
    async fn a_count_after_the_answer_is_the_exact_count_and_gives_its_room_back() {
        let later = CountLater::new(10);
        assert!(later.reserve(&[], 10, [0; 32], 100).is_none());
        let text = "fn main() { println!(\"héllo\"); }\n".repeat(100);
        let frames = vec![
            Bytes::copy_from_slice(&text.as_bytes()[..1000]),
            Bytes::copy_from_slice(&text.as_bytes()[1000..]),
        ];
        let digest = [7; 32];
        let counted = later
            .reserve(&frames, text.len() as u64, digest, 1 << 20)
            .expect("room")
            .start()
            .await
            .unwrap();
        assert_eq!(counted.tokens, CONTENT_ENCODING.count(&text) as u64);
        assert_eq!(counted.method, CONTENT_ENCODING.exact_method());
        assert_eq!(later.room.available_permits(), LATER_BYTES >> 10);
    }

    #[tokio::test]
    async fn without_room_nothing_is_counted_after() {
        let later = CountLater::new(0);
        let frames = vec![Bytes::from_static(b"x")];
        let too_big = (LATER_BYTES as u64) + 1;
        assert!(later.reserve(&frames, too_big, [0; 32], u64::MAX).is_none());
    }
}
