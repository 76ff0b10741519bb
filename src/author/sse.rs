//! A small server-sent-events parser (the WHATWG event-stream format): lines end in LF, CR
//! or CRLF (also split across chunks); `data:` lines accumulate (joined by LF) until a blank
//! line dispatches the event; a single space after the colon is dropped; comment lines
//! (starting with `:`) and other fields are ignored. Bytes are decoded as UTF-8 per line, so
//! a multi-byte character split across chunks is kept whole.

/// Incremental parser: feed chunks, collect dispatched event data.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    data: Option<String>,
    last_was_cr: bool,
}

impl SseParser {
    /// Feed bytes; returns the data of every event completed by them.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut events = Vec::new();
        for &b in bytes {
            if self.last_was_cr {
                self.last_was_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' | b'\r' => {
                    self.last_was_cr = b == b'\r';
                    let line = std::mem::take(&mut self.line);
                    self.end_line(&line, &mut events);
                }
                _ => self.line.push(b),
            }
        }
        events
    }

    fn end_line(&mut self, line: &[u8], events: &mut Vec<String>) {
        if line.is_empty() {
            if let Some(d) = self.data.take() {
                events.push(d);
            }
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&c| c == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        if field == b"data" {
            let v = String::from_utf8_lossy(value);
            match &mut self.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(&v);
                }
                None => self.data = Some(v.into_owned()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_and_line_endings() {
        let mut p = SseParser::default();
        let mut got = p.feed(b"data: {\"a\"");
        got.extend(p.feed(b":1}\r"));
        got.extend(p.feed(b"\n\r\n: keep-alive\n\ndata:x\ndata: y\n\nevent: e\nda"));
        got.extend(p.feed(b"ta: \xc3"));
        got.extend(p.feed(b"\xa9\n\n"));
        assert_eq!(got, vec!["{\"a\":1}", "x\ny", "é"]);
    }

    #[test]
    fn unterminated_event_is_not_dispatched() {
        let mut p = SseParser::default();
        assert!(p.feed(b"data: partial").is_empty());
        assert!(p.feed(b"\n").is_empty());
    }
}
