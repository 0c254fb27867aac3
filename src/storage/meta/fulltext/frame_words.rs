//! Which frames of one object hold a grep's words (`FullText::frame_words`),
//! so grep reads only those.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use tantivy::Term;
use tantivy::collector::DocSetCollector;
use tantivy::columnar::Column;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::IndexRecordOption;

use super::{FullText, LINES, STARTS_LINE, WHOLE_LINES, failed, lock};
use crate::storage::StorageError;
use crate::storage::meta::{FrameLines, FrameWords};

impl FullText {
    /// Each indexed frame of object `hash`, whether its text holds every
    /// one of `words` (terms as the tokenizer spells them) and its
    /// [`FrameLines`]; nothing for an object deleted since the last commit.
    /// A frame indexed twice (a retry not yet committed) holds the same
    /// content both times; its flags are taken together all the same.
    pub(crate) fn frame_words(
        &self,
        hash: &str,
        words: &[String],
    ) -> Result<Vec<FrameWords>, StorageError> {
        if lock(&self.pending).removed.contains(hash) {
            return Ok(Vec::new());
        }
        let searcher = self.reader.searcher();
        let object = || -> Box<dyn Query> {
            Box::new(TermQuery::new(
                Term::from_field_text(self.hash, hash),
                IndexRecordOption::Basic,
            ))
        };
        let every = searcher
            .search(&object(), &DocSetCollector)
            .map_err(failed)?;
        let mut clauses = vec![(Occur::Must, object())];
        for word in words {
            clauses.push((
                Occur::Must,
                Box::new(TermQuery::new(
                    Term::from_field_text(self.body, word),
                    IndexRecordOption::Basic,
                )) as Box<dyn Query>,
            ));
        }
        let holding = searcher
            .search(&BooleanQuery::new(clauses), &DocSetCollector)
            .map_err(failed)?;
        let mut columns: HashMap<u32, (Column<u64>, Column<u64>)> = HashMap::new();
        let mut frames: HashMap<u32, FrameWords> = HashMap::new();
        for address in every {
            let (idx, lines) = match columns.entry(address.segment_ord) {
                Entry::Occupied(open) => open.into_mut(),
                Entry::Vacant(slot) => {
                    let fields = searcher.segment_reader(address.segment_ord).fast_fields();
                    slot.insert((
                        fields.u64("idx").map_err(failed)?,
                        fields.u64(LINES).map_err(failed)?,
                    ))
                }
            };
            let (Some(idx), bits) = (idx.first(address.doc_id), lines.first(address.doc_id)) else {
                continue;
            };
            let bits = bits.unwrap_or(0);
            let seen = FrameWords {
                idx: u32::try_from(idx).unwrap_or(u32::MAX),
                holds_words: holding.contains(&address),
                lines: FrameLines {
                    starts_line: bits & STARTS_LINE != 0,
                    whole_lines: bits & WHOLE_LINES != 0,
                },
            };
            frames
                .entry(seen.idx)
                .and_modify(|known| {
                    known.holds_words |= seen.holds_words;
                    known.lines.starts_line &= seen.lines.starts_line;
                    known.lines.whole_lines &= seen.lines.whole_lines;
                })
                .or_insert(seen);
        }
        let mut frames: Vec<FrameWords> = frames.into_values().collect();
        frames.sort_unstable_by_key(|f| f.idx);
        Ok(frames)
    }
}
