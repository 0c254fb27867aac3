//! One frame's work, done off the async workers on a few frame worker
//! threads: redact the frame's input (when scanning), then compress, scan
//! and page the result, and hash it (and count its tokens, unless the put
//! answers first) when it is the content's only frame.
//!
//! Redaction and compression run in the same job, so an upload is one
//! hand-off per frame, not one per stage. Frames are
//! redacted side by side, each by a fresh [`Redactor`]: exact as long as the
//! frame before ended between lines outside a key block
//! ([`Redactor::is_clean`]). The assembler checks that in content order and
//! has a frame done again after its predecessor's redactor when it did not
//! (see [`FrameJob::Deferred`] and [`redo`]).

use std::sync::{Arc, LazyLock, Mutex};

use bytes::Bytes;
use sha2::{Digest, Sha256};
use tokio::sync::oneshot;

use super::{DomainError, counting};
use crate::domain::memories::read::seekable;
use crate::domain::redact::Redactor;
use crate::domain::summary::{FrameScan, scan_frame};
use crate::storage::meta::PageEntry;

/// Inputs up to this size are worked on right on the async worker: well
/// under 100 µs of work (~150 µs with a lone frame's token count), cheaper
/// than a hand-off to a frame worker.
pub(super) const INLINE_WORK_MAX: usize = 16 << 10;

/// What a frame job produced.
pub(super) struct FrameOut {
    /// The frame's input as it came (kept in case it must be redacted again).
    pub input: Bytes,
    /// Whether the input ends with this frame.
    pub last: bool,
    /// The redactor after this frame (`None` when not scanning): its report,
    /// and whether it ended clean.
    pub redactor: Option<Box<Redactor>>,
    /// The frame's content: the input, redacted when scanning.
    pub content: Bytes,
    /// `content` compressed as one zstd frame (empty for empty content).
    pub compressed: Vec<u8>,
    /// Summary material of `content`.
    pub scan: FrameScan,
    /// Page checksums and newline counts of `content`.
    pub pages: Vec<PageEntry>,
    /// The hash of the content so far, when the job computed it (a lone frame).
    pub hashed: Option<Sha256>,
    /// The content's token count, when the job made it (a lone frame):
    /// `Some(None)` when the content is not UTF-8.
    pub counted: Option<Option<u64>>,
}

/// A frame on its way to the assembler, in content order.
pub(super) enum FrameJob {
    /// Being worked on by a frame worker.
    Running(oneshot::Receiver<std::io::Result<FrameOut>>),
    /// Worked on already (small input).
    Done(Box<std::io::Result<FrameOut>>),
    /// Input cut inside a line: its redaction needs the redactor of the
    /// frame before, so the assembler starts it when that one is done.
    Deferred {
        /// The input.
        input: Bytes,
        /// Whether the input ends with it.
        last: bool,
    },
}

/// What a frame job does beyond redaction, compression, scan and pages.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Whole {
    /// Hash the content (it is all there is).
    pub hash: bool,
    /// Count the content's tokens when it is at most this many bytes (it is
    /// all there is, and the count is made before the answer): on the
    /// worker that has the content in its cache, not one hand-off later.
    pub count_max: Option<u64>,
}

/// Redacts `input` with `redactor` (when given), then compresses, scans and
/// pages the result; hashes and counts it too as `whole` says.
pub(super) fn work(
    input: Bytes,
    redactor: Option<Box<Redactor>>,
    last: bool,
    level: i32,
    whole: Whole,
) -> std::io::Result<FrameOut> {
    let (content, redactor) = match redactor {
        Some(mut redactor) => {
            let fresh = redactor.is_clean();
            let mut out = Vec::with_capacity(input.len() + 64);
            redactor.push(&input, &mut out);
            if last {
                redactor.finish(&mut out);
            }
            // Nothing carried in or out and nothing replaced: the output is
            // the input. Keep the one buffer (the input is kept anyway, in
            // case the frame must be redone) and free the copy at once.
            let unchanged = fresh && redactor.is_clean() && redactor.report().total == 0;
            debug_assert!(!unchanged || out == input);
            let content = if unchanged {
                input.clone()
            } else {
                Bytes::from(out)
            };
            (content, Some(redactor))
        }
        None => (input.clone(), None),
    };
    let compressed = if content.is_empty() {
        Vec::new()
    } else {
        seekable::compress_frame(&content, level)?
    };
    Ok(FrameOut {
        scan: scan_frame(&content),
        pages: PageEntry::of(&content),
        hashed: whole.hash.then(|| Sha256::new_with_prefix(&content)),
        counted: whole
            .count_max
            .filter(|&max| content.len() as u64 <= max)
            .map(|_| counting::count(&content)),
        input,
        last,
        redactor,
        content,
        compressed,
    })
}

/// The frame workers of this process: one thread per core, and one more,
/// taking jobs in the order they come.
///
/// A few threads, not the blocking pool: jobs started in order finish one
/// after the other, where many at once shared the cores and finished
/// together in bursts (the assembler, which takes frames in order, then
/// waited for the first of a burst while the reader, waiting for room, read
/// no input for the next). And each thread that allocates frame buffers
/// gets an arena of glibc's malloc that keeps them: spread over the blocking
/// pool's dozen threads, the peak RSS of a 1 GiB upload was 156-162 MiB,
/// on these threads 125-141 MiB. One more
/// thread than cores covers the moments a worker waits (measured on 2 cores
/// with a 200 MiB upload: 270-285 MiB/s with 2 at once, 305-325 with 3,
/// 280-290 with 4 and with no limit).
static WORKERS: LazyLock<Workers> = LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    Workers::start(cores + 1)
});

type Task = Box<dyn FnOnce() + Send>;

/// A fixed set of threads running tasks from one queue.
struct Workers {
    queue: std::sync::mpsc::Sender<Task>,
}

impl Workers {
    fn start(threads: usize) -> Self {
        let (queue, tasks) = std::sync::mpsc::channel::<Task>();
        let tasks = Arc::new(Mutex::new(tasks));
        for n in 0..threads {
            let tasks = tasks.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("cairn-frames-{n}"))
                .spawn(move || {
                    loop {
                        // Held while waiting: the next task goes to one waiting thread.
                        let task = match tasks.lock() {
                            Ok(tasks) => tasks.recv(),
                            Err(_) => return,
                        };
                        let Ok(task) = task else { return };
                        // A panicking task drops its answer channel (its caller
                        // gets an error); the thread goes on.
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(task));
                    }
                });
            if let Err(e) = spawned {
                tracing::error!(error = %e, "could not start a frame worker thread");
            }
        }
        Self { queue }
    }

    /// Runs `work` on a worker thread; its answer comes through the receiver.
    fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> oneshot::Receiver<T> {
        let (answer, answered) = oneshot::channel();
        let task: Task = Box::new(move || {
            let _ = answer.send(work());
        });
        // Fails only if every worker is gone: then the receiver reports it.
        let _ = self.queue.send(task);
        answered
    }
}

/// Starts [`work`] on a frame worker, or does it right here when the input is small.
pub(super) fn start(
    input: Bytes,
    redactor: Option<Box<Redactor>>,
    last: bool,
    level: i32,
    whole: Whole,
) -> FrameJob {
    if input.len() <= INLINE_WORK_MAX {
        return FrameJob::Done(Box::new(work(input, redactor, last, level, whole)));
    }
    FrameJob::Running(WORKERS.run(move || work(input, redactor, last, level, whole)))
}

/// Waits for a started frame job.
pub(super) async fn finish(job: FrameJob) -> Result<FrameOut, DomainError> {
    let done = match job {
        FrameJob::Done(done) => *done,
        FrameJob::Running(answer) => answer
            .await
            .map_err(|_| DomainError::internal("a frame worker failed on this frame"))?,
        FrameJob::Deferred { .. } => {
            return Err(DomainError::internal(
                "a deferred frame was awaited without its redactor",
            ));
        }
    };
    done.map_err(|e| DomainError::Storage(e.into()))
}

/// Works on `input` again after the frame before it, with that frame's redactor.
pub(super) async fn redo(
    input: Bytes,
    redactor: Box<Redactor>,
    last: bool,
    level: i32,
) -> Result<FrameOut, DomainError> {
    finish(start(input, Some(redactor), last, level, Whole::default())).await
}
