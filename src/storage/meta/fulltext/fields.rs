//! The index's fields: its schema, how a frame's line facts are packed
//! into a fast field, and the number that orders frames by object hash.

use std::path::Path;

use tantivy::Index;
use tantivy::directory::MmapDirectory;
use tantivy::schema::{
    FAST, Field, IndexRecordOption, STRING, Schema, TextFieldIndexing, TextOptions,
};

use super::{failed, pairs, words};
use crate::storage::StorageError;
use crate::storage::meta::FrameLines;

/// The schema, with its body, hash and frame-index fields.
pub(super) fn schema() -> (Schema, Field, Field, Field) {
    let mut builder = Schema::builder();
    let body = builder.add_text_field(
        "body",
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(words::NAME)
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        ),
    );
    builder.add_text_field(
        PAIRS,
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(pairs::NAME)
                .set_index_option(IndexRecordOption::WithFreqs),
        ),
    );

    let hash = builder.add_text_field("hash", STRING | FAST);
    let idx = builder.add_u64_field("idx", FAST);
    builder.add_u64_field(KEY, FAST);
    builder.add_u64_field(LINES, FAST);
    (builder.build(), body, hash, idx)
}

/// Opens (creating) the index in `dir`, and whether it was created now,
/// with its directory (a handle on the same mappings); `None` when the index
/// there has another schema.
pub(super) fn open_dir(
    dir: &Path,
    schema: Schema,
) -> Result<Option<(Index, bool, MmapDirectory)>, StorageError> {
    std::fs::create_dir_all(dir)?;
    let directory = MmapDirectory::open(dir).map_err(|e| {
        StorageError::Database(format!(
            "cannot open the full-text index at {}: {e}",
            dir.display()
        ))
    })?;
    let created = !Index::exists(&directory)
        .map_err(|e| StorageError::Database(format!("cannot read the full-text index: {e}")))?;
    match Index::open_or_create(directory.clone(), schema) {
        Ok(index) => Ok(Some((index, created, directory))),
        Err(tantivy::TantivyError::SchemaError(_)) => Ok(None),
        Err(e) => Err(failed(e)),
    }
}

/// The fast field ordering documents by their object's hash ([`hash_key`]).
pub(super) const KEY: &str = "key";
/// The field of the body's common-word pairs (see [`pairs`]).
pub(super) const PAIRS: &str = "pairs";
/// The fast field holding a frame's [`FrameLines`] as bits.
pub(super) const LINES: &str = "lines";
/// [`FrameLines::starts_line`]'s bit.
pub(super) const STARTS_LINE: u64 = 1;
/// [`FrameLines::whole_lines`]'s bit.
pub(super) const WHOLE_LINES: u64 = 2;

/// A frame's [`FrameLines`] as the bits of the [`LINES`] field.
pub(super) fn line_bits(lines: FrameLines) -> u64 {
    (if lines.starts_line { STARTS_LINE } else { 0 })
        | (if lines.whole_lines { WHOLE_LINES } else { 0 })
}

/// A number that orders hashes as their text does (ties aside): the first
/// 16 hex digits of a SHA-256 hash, or the first 8 bytes of anything else.
pub(super) fn hash_key(hash: &str) -> u64 {
    match hash.get(..16).map(|head| u64::from_str_radix(head, 16)) {
        Some(Ok(key))
            if hash
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()) =>
        {
            key
        }
        _ => {
            let mut bytes = [0u8; 8];
            for (to, from) in bytes.iter_mut().zip(hash.bytes()) {
                *to = from;
            }
            u64::from_be_bytes(bytes)
        }
    }
}
