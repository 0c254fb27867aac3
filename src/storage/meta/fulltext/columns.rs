//! The fast-field columns (object hash, frame index) of a searcher's
//! segments, for turning hits into objects and frames.

use std::collections::HashMap;

use tantivy::columnar::{Column, StrColumn};
use tantivy::{DocAddress, Searcher};

use super::failed;
use crate::storage::StorageError;

/// The fast-field columns of a searcher's segments, opened as needed.
pub(super) struct Columns<'a> {
    searcher: &'a Searcher,
    open: HashMap<u32, (StrColumn, Column<u64>)>,
    word: String,
}

impl<'a> Columns<'a> {
    pub(super) fn new(searcher: &'a Searcher) -> Self {
        Self {
            searcher,
            open: HashMap::new(),
            word: String::new(),
        }
    }

    /// The object hash and frame index of one document.
    pub(super) fn read(&mut self, address: DocAddress) -> Result<(String, u32), StorageError> {
        let missing =
            || StorageError::Database("full-text index: a document lacks its hash".into());
        if !self.open.contains_key(&address.segment_ord) {
            let fields = self
                .searcher
                .segment_reader(address.segment_ord)
                .fast_fields();
            let hash = fields.str("hash").map_err(failed)?.ok_or_else(missing)?;
            let idx = fields.u64("idx").map_err(failed)?;
            self.open.insert(address.segment_ord, (hash, idx));
        }
        let (hash, idx) = self.open.get(&address.segment_ord).ok_or_else(missing)?;
        let ord = hash.term_ords(address.doc_id).next().ok_or_else(missing)?;
        self.word.clear();
        hash.ord_to_str(ord, &mut self.word)?;
        let frame = idx.first(address.doc_id).ok_or_else(missing)?;
        Ok((self.word.clone(), u32::try_from(frame).unwrap_or(u32::MAX)))
    }
}
