//! How an object record is kept in the shared cache: a version byte, whether
//! it has data, the length of the record's JSON (without its data), that
//! JSON, then the data as is. Inline data stays raw bytes (JSON would write
//! each byte as a number, ~3.5 times the size).

use crate::storage::meta::ObjectRecord;

/// The version of this layout; anything else reads as a miss.
const VERSION: u8 = 1;

/// Bytes before the JSON: version, data flag, JSON length (u32, little-endian).
const HEADER: usize = 6;

/// The cached form of `record`.
pub fn encode(record: &ObjectRecord) -> Option<Vec<u8>> {
    let shell = ObjectRecord {
        data: None,
        frames: record.frames.clone(),
        hash: record.hash.clone(),
        ..*record
    };
    let json = serde_json::to_vec(&shell).ok()?;
    let json_len = u32::try_from(json.len()).ok()?;
    let data = record.data.as_deref();
    let mut out = Vec::with_capacity(HEADER + json.len() + data.map_or(0, <[u8]>::len));
    out.push(VERSION);
    out.push(u8::from(data.is_some()));
    out.extend_from_slice(&json_len.to_le_bytes());
    out.extend_from_slice(&json);
    out.extend_from_slice(data.unwrap_or_default());
    Some(out)
}

/// The record `bytes` holds, if they are well formed and are the record of `hash`.
pub fn decode(bytes: &[u8], hash: &str) -> Option<ObjectRecord> {
    let (&version, rest) = bytes.split_first()?;
    let (&has_data, rest) = rest.split_first()?;
    if version != VERSION || has_data > 1 {
        return None;
    }
    let (len, rest) = rest.split_first_chunk::<4>()?;
    let len = usize::try_from(u32::from_le_bytes(*len)).ok()?;
    let (json, data) = (rest.get(..len)?, rest.get(len..)?);
    let mut record: ObjectRecord = serde_json::from_slice(json).ok()?;
    if record.hash != hash || record.data.is_some() || (has_data == 0 && !data.is_empty()) {
        return None;
    }
    record.data = (has_data == 1).then(|| data.to_vec());
    Some(record)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::storage::meta::{FrameEntry, Layout, PageEntry};

    fn record(layout: Layout, data: Option<Vec<u8>>) -> ObjectRecord {
        ObjectRecord {
            hash: "ab".repeat(32),
            bytes: 70_000,
            lines: 12,
            stored_bytes: 900,
            layout,
            data,
            frames: vec![FrameEntry {
                content_offset: 0,
                content_len: 70_000,
                first_line: 1,
                stored_offset: 0,
                stored_len: 900,
                pages: PageEntry::of(&[b'x'; 70_000]),
            }],
        }
    }

    fn same(a: &ObjectRecord, b: &ObjectRecord) -> bool {
        serde_json::to_value(a).unwrap() == serde_json::to_value(b).unwrap()
    }

    #[test]
    fn records_read_back_as_they_were_with_or_without_data() {
        for original in [
            record(Layout::Blob, None),
            record(Layout::Inline, Some(vec![0, 1, 2, 255, b'{'])),
            record(Layout::Raw, Some(Vec::new())),
        ] {
            let bytes = encode(&original).unwrap();
            let back = decode(&bytes, &original.hash).unwrap();
            assert!(same(&back, &original), "{back:?} != {original:?}");
        }
    }

    #[test]
    fn inline_data_is_kept_as_raw_bytes() {
        let data = vec![200u8; 10_000];
        let bytes = encode(&record(Layout::Inline, Some(data))).unwrap();
        assert!(bytes.len() < 11_000, "{} bytes", bytes.len());
    }

    #[test]
    fn damaged_or_foreign_entries_read_as_nothing() {
        let original = record(Layout::Inline, Some(b"data".to_vec()));
        let bytes = encode(&original).unwrap();
        assert!(decode(&bytes, &"cd".repeat(32)).is_none(), "another hash");
        assert!(decode(&bytes[..bytes.len() / 2], &original.hash).is_none());
        assert!(decode(b"not an entry", &original.hash).is_none());
        assert!(decode(&[], &original.hash).is_none());
        let mut other_version = bytes.clone();
        other_version[0] = 2;
        assert!(decode(&other_version, &original.hash).is_none());
        let mut flipped = bytes;
        flipped[10] ^= 0xff;
        assert!(decode(&flipped, &original.hash).is_none());
    }
}
