//! The content's SHA-256 while frames stream in: on the caller for a lone
//! frame, else on a thread of its own fed in order.

use bytes::Bytes;
use sha2::{Digest, Sha256};

use crate::domain::DomainError;

/// The content hash. A lone frame is hashed by its worker; the frames of a
/// longer content go to a thread of their own that hashes them in order
/// while the next frames are assembled, so hashing (~2 GB/s, one core) is
/// not a step every frame waits for.
pub(super) enum Hashing {
    /// The hash so far, all of it computed.
    Done(Sha256),
    /// Frames being hashed on the blocking pool.
    Thread {
        frames: tokio::sync::mpsc::Sender<Bytes>,
        hasher: tokio::task::JoinHandle<Sha256>,
    },
}

impl Hashing {
    /// Adds the next frame's content.
    pub(super) async fn update(&mut self, content: Bytes) -> Result<(), DomainError> {
        if let Self::Done(hasher) = self {
            let mut hasher = std::mem::take(hasher);
            let (frames, mut queue) = tokio::sync::mpsc::channel::<Bytes>(4);
            let hasher = tokio::task::spawn_blocking(move || {
                while let Some(content) = queue.blocking_recv() {
                    hasher.update(&content);
                }
                hasher
            });
            *self = Self::Thread { frames, hasher };
        }
        if let Self::Thread { frames, .. } = self
            && frames.send(content).await.is_err()
        {
            return Err(DomainError::internal("the hashing thread stopped"));
        }
        Ok(())
    }

    /// The hash of all the content added.
    pub(super) async fn finish(self) -> Result<Sha256, DomainError> {
        match self {
            Self::Done(hasher) => Ok(hasher),
            Self::Thread { frames, hasher } => {
                drop(frames);
                hasher.await.map_err(DomainError::internal)
            }
        }
    }
}
