//! Server-sent events as the providers send them: a parser that cuts a byte
//! stream into events (keeping each event's exact text, so events Cairn does
//! not touch go out byte for byte) and the writer of events Cairn changes.

/// One event: its `event:` name (if any), its `data:` payload, and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The `event:` field.
    pub name: Option<String>,
    /// The `data:` lines joined by newlines.
    pub data: String,
    /// The event as it came, with its closing blank line.
    pub raw: Vec<u8>,
}

impl Event {
    /// An event written anew (`event:` line when named, one `data:` line).
    pub fn new(name: Option<&str>, data: &str) -> Self {
        let mut raw = Vec::with_capacity(data.len() + 32);
        if let Some(name) = name {
            raw.extend_from_slice(b"event: ");
            raw.extend_from_slice(name.as_bytes());
            raw.push(b'\n');
        }
        for line in data.split('\n') {
            raw.extend_from_slice(b"data: ");
            raw.extend_from_slice(line.as_bytes());
            raw.push(b'\n');
        }
        raw.push(b'\n');
        Self {
            name: name.map(str::to_owned),
            data: data.to_owned(),
            raw,
        }
    }
}

/// Cuts bytes into events as they arrive.
#[derive(Default)]
pub struct Parser {
    buffer: Vec<u8>,
}

impl Parser {
    /// Adds bytes; answers the events they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Event> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some((end, len)) = boundary(&self.buffer) {
            let raw: Vec<u8> = self.buffer.drain(..end + len).collect();
            if let Some(event) = parse(raw) {
                events.push(event);
            }
        }
        events
    }

    /// Bytes of the unfinished event held now (a stream whose events never
    /// end would grow it: the caller cuts the stream past a limit).
    pub fn pending(&self) -> usize {
        self.buffer.len()
    }

    /// True when bytes of an unfinished event are left.
    pub fn has_partial(&self) -> bool {
        self.buffer.iter().any(|b| !b.is_ascii_whitespace())
    }
}

/// Where the first blank line (an event's end) is: (index, length of the separator).
fn boundary(buffer: &[u8]) -> Option<(usize, usize)> {
    let lf = memchr::memmem::find(buffer, b"\n\n").map(|i| (i, 2));
    let crlf = memchr::memmem::find(buffer, b"\r\n\r\n").map(|i| (i, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

fn parse(raw: Vec<u8>) -> Option<Event> {
    let text = String::from_utf8_lossy(&raw).into_owned();
    let mut name = None;
    let mut data: Vec<&str> = Vec::new();
    let mut any = false;
    for line in text.lines() {
        if line.is_empty() || line.starts_with(':') {
            any |= line.starts_with(':');
            continue;
        }
        any = true;
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => name = Some(value.to_owned()),
            "data" => data.push(value),
            _ => {}
        }
    }
    any.then(|| Event {
        name,
        data: data.join("\n"),
        raw,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_cut_wherever_the_bytes_break() {
        let stream = b"event: message_start\ndata: {\"a\":1}\n\n: ping\n\ndata: [DONE]\r\n\r\n";
        for cut in 0..stream.len() {
            let mut parser = Parser::default();
            let mut events = parser.push(&stream[..cut]);
            events.extend(parser.push(&stream[cut..]));
            assert_eq!(events.len(), 3, "cut at {cut}");
            assert_eq!(events[0].name.as_deref(), Some("message_start"));
            assert_eq!(events[0].data, "{\"a\":1}");
            assert_eq!(events[2].data, "[DONE]");
            let raw: Vec<u8> = events.iter().flat_map(|e| e.raw.clone()).collect();
            assert_eq!(raw, stream.to_vec());
        }
        assert_eq!(
            Event::new(Some("x"), "{}").raw,
            b"event: x\ndata: {}\n\n".to_vec()
        );
    }
}
