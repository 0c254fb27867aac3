//! A stream adapter that redacts an upload on its way to ingest.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use futures::Stream;

use super::{Redactor, Report};

/// Pieces larger than this are redacted on the blocking pool, so that a large
/// piece (a whole JSON body) does not hold up the async worker.
const INLINE_MAX: usize = 64 << 10;

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

/// Job of a piece redacted on the blocking pool: the redactor comes back with the output.
type Job = tokio::task::JoinHandle<(Box<Redactor>, Vec<u8>)>;

/// Wraps a body stream and yields it redacted (or as it is, when off).
///
/// Poll it through `&mut` so that [`Redacting::report`] can be read after
/// the stream is consumed.
pub struct Redacting<S> {
    inner: S,
    /// The redactor; `None` when redaction is off or while a job holds it.
    redactor: Option<Box<Redactor>>,
    job: Option<Job>,
    finished: bool,
}

impl<S> Redacting<S> {
    /// Wraps `inner`; `enabled: false` passes every piece through unchanged.
    pub fn new(inner: S, enabled: bool) -> Self {
        Self {
            inner,
            redactor: enabled.then(Box::default),
            job: None,
            finished: false,
        }
    }

    /// Whether the content is being redacted.
    pub fn enabled(&self) -> bool {
        self.redactor.is_some() || self.job.is_some()
    }

    /// What was redacted so far (all of it once the stream has ended).
    pub fn report(&self) -> Report {
        self.redactor
            .as_ref()
            .map(|r| r.report().clone())
            .unwrap_or_default()
    }
}

impl<S, E> Stream for Redacting<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
{
    type Item = Result<Bytes, RedactingError<E>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(job) = this.job.as_mut() {
                let done = ready!(Pin::new(job).poll(cx));
                this.job = None;
                match done {
                    Ok((redactor, out)) => {
                        this.redactor = Some(redactor);
                        if !out.is_empty() {
                            return Poll::Ready(Some(Ok(Bytes::from(out))));
                        }
                        continue;
                    }
                    Err(e) => {
                        this.finished = true;
                        return Poll::Ready(Some(Err(RedactingError::Worker(e.to_string()))));
                    }
                }
            }
            if this.finished {
                return Poll::Ready(None);
            }
            match ready!(Pin::new(&mut this.inner).poll_next(cx)) {
                Some(Err(e)) => return Poll::Ready(Some(Err(RedactingError::Body(e)))),
                Some(Ok(piece)) => {
                    let Some(mut redactor) = this.redactor.take() else {
                        return Poll::Ready(Some(Ok(piece))); // redaction is off
                    };
                    if piece.len() > INLINE_MAX {
                        this.job = Some(tokio::task::spawn_blocking(move || {
                            let mut out = Vec::with_capacity(piece.len() + 64);
                            redactor.push(&piece, &mut out);
                            (redactor, out)
                        }));
                        continue;
                    }
                    let mut out = Vec::with_capacity(piece.len() + 64);
                    redactor.push(&piece, &mut out);
                    this.redactor = Some(redactor);
                    if !out.is_empty() {
                        return Poll::Ready(Some(Ok(Bytes::from(out))));
                    }
                }
                None => {
                    this.finished = true;
                    if let Some(redactor) = this.redactor.as_mut() {
                        let mut out = Vec::new();
                        redactor.finish(&mut out);
                        if !out.is_empty() {
                            return Poll::Ready(Some(Ok(Bytes::from(out))));
                        }
                    }
                    return Poll::Ready(None);
                }
            }
        }
    }
}
