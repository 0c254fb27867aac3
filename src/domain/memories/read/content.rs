//! Whole-content and ranged reads, streamed frame by frame.
//!
//! Every frame is checked (zstd checksum, length) before its bytes go out; a
//! whole-content read also checks the SHA-256 at the end. The first piece is
//! read before the stream is returned, so a corrupt start is an error status,
//! not a broken body.

use bytes::Bytes;
use futures::Stream;
use sha2::{Digest, Sha256};

use crate::domain::DomainError;
use crate::domain::memories::read::ObjectReader;

struct State {
    reader: ObjectReader,
    pos: u64,
    end: u64,
    hasher: Option<Sha256>,
    expected: String,
    done: bool,
}

/// Streams content bytes `[start, end)`; with `verify_hash` (whole content) the
/// SHA-256 is compared with `id` at the end.
pub async fn stream(
    reader: ObjectReader,
    id: String,
    start: u64,
    end: u64,
    verify_hash: bool,
) -> Result<impl Stream<Item = Result<Bytes, DomainError>> + Send, DomainError> {
    let mut state = State {
        reader: reader.sequential(end),
        pos: start,
        end,
        hasher: verify_hash.then(Sha256::new),
        expected: id,
        done: false,
    };
    let first = next_piece(&mut state).await?;
    let head = futures::stream::iter(first.map(Ok));
    let rest = futures::stream::unfold(state, |mut state| async move {
        match next_piece(&mut state).await {
            Ok(Some(piece)) => Some((Ok(piece), state)),
            Ok(None) => None,
            Err(e) => {
                state.done = true;
                Some((Err(e), state))
            }
        }
    });
    Ok(futures::StreamExt::chain(head, rest))
}

async fn next_piece(state: &mut State) -> Result<Option<Bytes>, DomainError> {
    if state.done {
        return Ok(None);
    }
    if state.pos >= state.end {
        state.done = true;
        if let Some(hasher) = state.hasher.take() {
            let actual = hex::encode(hasher.finalize());
            if actual != state.expected {
                return Err(DomainError::Corrupt {
                    id: state.expected.clone(),
                    detail: format!("content hashes to {actual}"),
                });
            }
        }
        return Ok(None);
    }
    let idx = state.reader.frame_at_offset(state.pos);
    let frame_start = state
        .reader
        .frame_entry(idx)
        .ok_or_else(|| DomainError::Corrupt {
            id: state.expected.clone(),
            detail: "frame index is empty".into(),
        })?
        .content_offset;
    let data = state.reader.frame(idx, usize::MAX).await?;
    let from = (state.pos - frame_start) as usize;
    let to = ((state.end - frame_start) as usize).min(data.len());
    let piece = data.slice(from.min(to)..to);
    if piece.is_empty() {
        return Err(DomainError::Corrupt {
            id: state.expected.clone(),
            detail: format!("no content at offset {}", state.pos),
        });
    }
    if let Some(hasher) = state.hasher.as_mut() {
        hasher.update(&piece);
    }
    state.pos += piece.len() as u64;
    Ok(Some(piece))
}
