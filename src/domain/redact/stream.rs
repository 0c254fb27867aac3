//! A stream adapter that redacts an upload on its way to ingest, on several
//! cores at once.
//!
//! The input is cut into chunks of whole lines, and each chunk is redacted
//! by a fresh [`Redactor`] on the blocking pool, several at a time. Between
//! lines outside a key block a redactor holds nothing ([`Redactor::is_clean`]),
//! so a fresh one writes exactly what the sequential one would. When a chunk
//! does end inside a key block or a line (a line longer than a chunk), the
//! next chunk's speculative result is dropped and that chunk is redacted
//! again by the previous chunk's redactor, as a single redactor would have.
//! The output is thus the same bytes as one redactor over the whole input,
//! whatever the pieces and chunks.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Bytes, BytesMut};
use futures::Stream;

use super::{Redactor, Report};

/// Input redacted in one job: big enough that the hand-off to the blocking
/// pool costs little beside it (~0.5 ms of work), small enough to spread an
/// upload over the cores.
pub const CHUNK_BYTES: usize = 256 << 10;
/// Input that is all there is and at most this size is redacted right on
/// the async worker: cheaper than a hand-off.
const INLINE_MAX: usize = 64 << 10;
/// Chunks being redacted at once (on top of the one being handed out).
const IN_FLIGHT: usize = 2;

/// Why a redacting stream failed.
#[derive(Debug)]
pub enum RedactingError<E> {
    /// The wrapped stream failed.
    Body(E),
    /// The redaction task failed (it panicked or was cancelled).
    Worker(String),
}

impl<E: std::fmt::Display> std::fmt::Display for RedactingError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Body(e) => e.fmt(f),
            Self::Worker(e) => write!(f, "redaction failed: {e}"),
        }
    }
}

/// A chunk redacted on the blocking pool.
struct Done {
    /// The chunk's input, kept in case it must be redacted again.
    input: Bytes,
    /// Whether the input ends with the chunk.
    last: bool,
    /// The redacted output.
    out: Vec<u8>,
    /// The redactor after the chunk: its report, and whether it is clean.
    redactor: Box<Redactor>,
}

type Job = tokio::task::JoinHandle<Done>;

/// Redacts `input` with `redactor` (finishing it when `last`).
fn redact(mut redactor: Box<Redactor>, input: Bytes, last: bool) -> Done {
    let mut out = Vec::with_capacity(input.len() + 64);
    redactor.push(&input, &mut out);
    if last {
        redactor.finish(&mut out);
    }
    Done {
        input,
        last,
        out,
        redactor,
    }
}

/// Wraps a body stream and yields it redacted (or as it is, when off).
///
/// Poll it through `&mut` so that [`Redacting::report`] can be read after
/// the stream is consumed.
pub struct Redacting<S> {
    inner: S,
    enabled: bool,
    /// Bytes per chunk.
    chunk_bytes: usize,
    /// Input not handed out yet.
    pending: BytesMut,
    /// Chunks being redacted, in input order.
    jobs: VecDeque<Job>,
    /// The redactor of the last chunk taken when it ended unclean: the
    /// next chunk must be redacted by it.
    carried: Option<Box<Redactor>>,
    /// Whether any chunk was handed out.
    handed_out: bool,
    /// Whether the last chunk was handed out.
    handed_out_last: bool,
    /// The input has ended.
    input_done: bool,
    /// Nothing more to yield.
    finished: bool,
    report: Report,
}

impl<S> Redacting<S> {
    /// Wraps `inner`; `enabled: false` passes every piece through unchanged.
    pub fn new(inner: S, enabled: bool) -> Self {
        Self::with_chunk_bytes(inner, enabled, CHUNK_BYTES)
    }

    /// Like [`Redacting::new`], cutting the input into chunks of about `chunk_bytes`.
    pub fn with_chunk_bytes(inner: S, enabled: bool, chunk_bytes: usize) -> Self {
        Self {
            inner,
            enabled,
            chunk_bytes: chunk_bytes.max(1),
            pending: BytesMut::new(),
            jobs: VecDeque::new(),
            carried: None,
            handed_out: false,
            handed_out_last: false,
            input_done: false,
            finished: false,
            report: Report::default(),
        }
    }

    /// Whether the content is being redacted.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// What was redacted so far (all of it once the stream has ended).
    pub fn report(&self) -> Report {
        self.report.clone()
    }

    /// Hands the next chunk of whole lines (all that is left, at the end) to the blocking pool.
    fn hand_out(&mut self, last: bool) {
        let cut = if last {
            self.pending.len()
        } else {
            let window = &self.pending[..self.chunk_bytes.min(self.pending.len())];
            // A chunk without a line end is cut anyway: its redactor ends
            // unclean and the next chunk is redone after it.
            memchr::memrchr(b'\n', window).map_or(window.len(), |i| i + 1)
        };
        let input = self.pending.split_to(cut).freeze();
        self.handed_out = true;
        self.handed_out_last = last;
        self.jobs.push_back(tokio::task::spawn_blocking(move || {
            redact(Box::default(), input, last)
        }));
    }

    /// Takes a chunk in order: its output, or, when the chunk before ended
    /// unclean, a job that redacts it again after that chunk.
    fn take(&mut self, mut done: Done) -> Option<Vec<u8>> {
        if let Some(redactor) = self.carried.take() {
            let (input, last) = (done.input, done.last);
            self.jobs.push_front(tokio::task::spawn_blocking(move || {
                redact(redactor, input, last)
            }));
            return None;
        }
        self.report.merge(&done.redactor.take_report());
        if !done.redactor.is_clean() {
            self.carried = Some(done.redactor);
        }
        Some(done.out)
    }
}

impl<S, E> Stream for Redacting<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
{
    type Item = Result<Bytes, RedactingError<E>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if !this.enabled {
            return Pin::new(&mut this.inner)
                .poll_next(cx)
                .map(|piece| piece.map(|piece| piece.map_err(RedactingError::Body)));
        }
        loop {
            if this.finished {
                return Poll::Ready(None);
            }
            // Read a chunk's worth while there is room for another job.
            while !this.input_done
                && this.pending.len() < this.chunk_bytes
                && this.jobs.len() < IN_FLIGHT
            {
                match Pin::new(&mut this.inner).poll_next(cx) {
                    Poll::Ready(Some(Ok(piece))) => this.pending.extend_from_slice(&piece),
                    Poll::Ready(Some(Err(e))) => {
                        this.finished = true;
                        return Poll::Ready(Some(Err(RedactingError::Body(e))));
                    }
                    Poll::Ready(None) => {
                        this.input_done = true;
                        if !this.handed_out && this.pending.len() <= INLINE_MAX {
                            // Small content, all there is: redact it here.
                            let input = std::mem::take(&mut this.pending).freeze();
                            let mut done = redact(Box::default(), input, true);
                            this.report.merge(&done.redactor.take_report());
                            this.finished = true;
                            if done.out.is_empty() {
                                return Poll::Ready(None);
                            }
                            return Poll::Ready(Some(Ok(Bytes::from(done.out))));
                        }
                    }
                    Poll::Pending => break,
                }
            }
            if this.jobs.len() < IN_FLIGHT {
                if this.pending.len() > this.chunk_bytes
                    || (this.pending.len() == this.chunk_bytes && !this.input_done)
                {
                    this.hand_out(false);
                    continue;
                }
                if this.input_done && !this.handed_out_last {
                    this.hand_out(true);
                    continue;
                }
            }
            let Some(job) = this.jobs.front_mut() else {
                if this.input_done {
                    // Every chunk is taken; the last one finished its redactor.
                    this.finished = true;
                    return Poll::Ready(None);
                }
                return Poll::Pending; // the body has nothing yet
            };
            let done = ready!(Pin::new(job).poll(cx));
            this.jobs.pop_front();
            match done {
                Ok(done) => {
                    if let Some(out) = this.take(done)
                        && !out.is_empty()
                    {
                        return Poll::Ready(Some(Ok(Bytes::from(out))));
                    }
                }
                Err(e) => {
                    this.finished = true;
                    return Poll::Ready(Some(Err(RedactingError::Worker(e.to_string()))));
                }
            }
        }
    }
}
