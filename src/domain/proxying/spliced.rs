//! A JSON body kept as the client wrote it: Cairn's edits are spliced into
//! the client's bytes instead of re-serializing the whole value. A body Cairn
//! does not change goes on byte for byte; a changed one keeps the client's
//! key order, spacing and escapes everywhere outside the values it changed
//! (a provider's prompt cache, and the model, see what the client wrote).
//!
//! Edits are made on a [`Value`]; [`Spliced::replace`] then walks the old and
//! new values beside the old bytes: an equal value is copied as it was
//! written, a changed object keeps its keys in the written order (new keys
//! follow, removed keys go), a changed array keeps its leading items, and
//! anything else changed is written by `serde_json`.
//!
//! The value costs more memory than the bytes, and an exchange keeps its
//! body for the upstream's whole answer (seconds): [`Spliced::lighten`] lets
//! the value go once the rewrite is done, and it is read from the bytes again
//! only if a retrieval round edits the body.

use std::collections::HashMap;
use std::fmt;
use std::sync::OnceLock;

use bytes::Bytes;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

/// A JSON body: the bytes that go on and the value they hold. The bytes
/// are shared, not copied, with whatever else keeps them (the request sent
/// upstream, the exchange's record in the ledger).
#[derive(Clone, Debug)]
pub struct Spliced {
    bytes: Bytes,
    /// The value the bytes hold, while it is kept (read again when needed).
    value: OnceLock<Value>,
}

impl Spliced {
    /// Reads `bytes` as JSON.
    pub fn parse(bytes: impl Into<Bytes>) -> Result<Self, serde_json::Error> {
        let bytes = bytes.into();
        let value: Value = serde_json::from_slice(&bytes)?;
        Ok(Self {
            bytes,
            value: OnceLock::from(value),
        })
    }

    /// The value the bytes hold (read from them again after [`Self::lighten`]).
    pub fn value(&self) -> &Value {
        // The bytes are JSON: read as JSON by `parse`, or written from a value.
        self.value
            .get_or_init(|| serde_json::from_slice(&self.bytes).unwrap_or(Value::Null))
    }

    /// Lets the value go and keeps only the bytes, until a read needs it again.
    pub fn lighten(&mut self) {
        self.value = OnceLock::new();
    }

    /// The bytes to send.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The bytes to send, shared (a reference count, not a copy).
    pub fn shared(&self) -> Bytes {
        self.bytes.clone()
    }

    /// Takes `new` as the body's value, its bytes spliced from the old ones.
    pub fn replace(&mut self, new: Value) -> Result<(), serde_json::Error> {
        self.swap(new).map(drop)
    }

    /// Like [`Spliced::replace`], answering the value replaced: the body as
    /// it was, without a copy or a parse of it (an unchanged body answers
    /// `new`, which equals it).
    pub fn swap(&mut self, new: Value) -> Result<Value, serde_json::Error> {
        if new == *self.value() {
            return Ok(new);
        }
        let text = std::str::from_utf8(&self.bytes).map_err(serde::de::Error::custom)?;
        // The whole text is the old value's bytes, with whatever space
        // surrounds them: read once less than as a `RawValue` first, and
        // never copied as it is (the value changed).
        let mut out = Vec::with_capacity(self.bytes.len());
        write(&mut out, text, self.value(), &new)?;
        self.bytes = Bytes::from(out);
        let old = std::mem::replace(&mut self.value, OnceLock::from(new));
        Ok(old.into_inner().unwrap_or(Value::Null))
    }

    /// Applies `edit` to a copy of the value and splices the result in.
    pub fn edit(&mut self, edit: impl FnOnce(&mut Value)) -> Result<(), serde_json::Error> {
        let mut new = self.value().clone();
        edit(&mut new);
        self.replace(new)
    }
}

/// Writes `new` to `out`, reusing the bytes `raw` of `old` wherever they agree.
fn write(out: &mut Vec<u8>, raw: &str, old: &Value, new: &Value) -> serde_json::Result<()> {
    if old == new {
        out.extend_from_slice(raw.as_bytes());
        return Ok(());
    }
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            let Fields(fields) = serde_json::from_str(raw)?;
            // A key written twice holds its last value (as serde_json reads it).
            let last: HashMap<&str, usize> = fields
                .iter()
                .enumerate()
                .map(|(i, (key, _))| (key.as_str(), i))
                .collect();
            out.push(b'{');
            let mut first = true;
            for (i, (key, raw)) in fields.iter().enumerate() {
                let (Some(new), Some(old)) = (new.get(key), old.get(key)) else {
                    continue;
                };
                if last.get(key.as_str()) != Some(&i) {
                    continue;
                }
                separate(out, &mut first);
                serde_json::to_writer(&mut *out, key)?;
                out.push(b':');
                write(out, raw.get(), old, new)?;
            }
            for (key, value) in new.iter().filter(|(k, _)| !old.contains_key(*k)) {
                separate(out, &mut first);
                serde_json::to_writer(&mut *out, key)?;
                out.push(b':');
                serde_json::to_writer(&mut *out, value)?;
            }
            out.push(b'}');
        }
        (Value::Array(old), Value::Array(new)) => {
            let items: Vec<&RawValue> = serde_json::from_str(raw)?;
            out.push(b'[');
            for (i, value) in new.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                match (items.get(i), old.get(i)) {
                    (Some(raw), Some(old)) => write(out, raw.get(), old, value)?,
                    _ => serde_json::to_writer(&mut *out, value)?,
                }
            }
            out.push(b']');
        }
        _ => serde_json::to_writer(&mut *out, new)?,
    }
    Ok(())
}

fn separate(out: &mut Vec<u8>, first: &mut bool) {
    if !*first {
        out.push(b',');
    }
    *first = false;
}

/// An object's fields in the order they were written, each value as its bytes.
struct Fields<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Fields<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Ordered;
        impl<'de> Visitor<'de> for Ordered {
            type Value = Fields<'de>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut fields = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    let value: &'de RawValue = map.next_value()?;
                    fields.push((key, value));
                }
                Ok(Fields(fields))
            }
        }
        deserializer.deserialize_map(Ordered)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const WRITTEN: &str = "{ \"zeta\": 1.50,\n  \"model\" : \"m\", \"messages\": [ {\"role\":\"user\", \
        \"content\": \"caf\\u00e9\"}, {\"role\": \"tool\", \"content\": \"long\"} ], \"alpha\": [] }";

    #[test]
    fn an_unchanged_body_keeps_its_bytes() {
        let mut body = Spliced::parse(WRITTEN.as_bytes().to_vec()).unwrap();
        let same = body.value().clone();
        body.replace(same).unwrap();
        assert_eq!(body.bytes(), WRITTEN.as_bytes());
    }

    #[test]
    fn an_edit_keeps_key_order_and_the_untouched_bytes() {
        let mut body = Spliced::parse(WRITTEN.as_bytes().to_vec()).unwrap();
        body.edit(|v| {
            v["messages"][1]["content"] = json!("[cairn: short]");
            v["tools"] = json!([{"name": "memory_fetch"}]);
        })
        .unwrap();
        let text = std::str::from_utf8(body.bytes()).unwrap();
        assert_eq!(
            text,
            "{\"zeta\":1.50,\"model\":\"m\",\"messages\":[{\"role\":\"user\", \
             \"content\": \"caf\\u00e9\"},{\"role\":\"tool\",\"content\":\"[cairn: short]\"}],\
             \"alpha\":[],\"tools\":[{\"name\":\"memory_fetch\"}]}"
        );
        let reread: Value = serde_json::from_slice(body.bytes()).unwrap();
        assert_eq!(&reread, body.value());
    }

    #[test]
    fn space_around_an_edited_body_goes_and_its_inside_stays() {
        let mut body = Spliced::parse(format!(" \n{WRITTEN}\r\n ").into_bytes()).unwrap();
        body.edit(|v| v["messages"][1]["content"] = json!("[cairn: short]"))
            .unwrap();
        let text = std::str::from_utf8(body.bytes()).unwrap();
        assert!(text.starts_with("{\"zeta\":1.50,"), "{text}");
        assert!(text.ends_with("\"alpha\":[]}"), "{text}");
        assert!(text.contains("{\"role\":\"user\", \"content\": \"caf\\u00e9\"}"));
        let reread: Value = serde_json::from_slice(body.bytes()).unwrap();
        assert_eq!(&reread, body.value());
    }

    #[test]
    fn appended_items_leave_the_prefix_bytes_alone() {
        let mut body = Spliced::parse(WRITTEN.as_bytes().to_vec()).unwrap();
        body.edit(|v| {
            if let Some(list) = v["messages"].as_array_mut() {
                list.push(json!({"role": "assistant", "content": "ok"}));
            }
        })
        .unwrap();
        let text = std::str::from_utf8(body.bytes()).unwrap();
        assert!(text.contains(
            "[{\"role\":\"user\", \"content\": \"caf\\u00e9\"},{\"role\": \"tool\", \"content\": \"long\"},"
        ));
    }

    #[test]
    fn a_light_body_reads_its_value_again_and_edits_alike() {
        let edit = |v: &mut Value| v["messages"][1]["content"] = json!("[cairn: short]");
        let mut kept = Spliced::parse(WRITTEN.as_bytes().to_vec()).unwrap();
        let mut light = kept.clone();
        light.lighten();
        assert!(light.value.get().is_none());
        assert_eq!(light.value(), kept.value());
        light.lighten();
        kept.edit(edit).unwrap();
        light.edit(edit).unwrap();
        assert_eq!(light.bytes(), kept.bytes());
        light.lighten();
        assert_eq!(light.value()["messages"][1]["content"], "[cairn: short]");
    }

    #[test]
    fn removed_and_repeated_keys_are_written_as_serde_reads_them() {
        let mut body = Spliced::parse(br#"{"a": 1, "b": 2, "a": 3}"#.to_vec()).unwrap();
        assert_eq!(body.value()["a"], 3);
        body.edit(|v| {
            if let Some(map) = v.as_object_mut() {
                map.remove("b");
            }
        })
        .unwrap();
        assert_eq!(body.bytes(), br#"{"a":3}"#);
    }
}
