//! A small server-sent-events parser (the WHATWG event-stream format): lines end in LF, CR
//! or CRLF (also split across chunks); `data:` lines accumulate (joined by LF) until a blank
//! line dispatches the event; a single space after the colon is dropped; comment lines
//! (starting with `:`) and other fields are ignored. Bytes are decoded as UTF-8 per line, so
//! a multi-byte character split across chunks is kept whole; a `data` line that is not
//! UTF-8 is an error (the caller's `bad-response`), never decoded lossily.

/// Incremental parser: feed chunks, collect dispatched event data.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    data: Option<String>,
    last_was_cr: bool,
}

impl SseParser {
    /// Feed bytes; returns the data of every event completed by them, or the offset of the
    /// first invalid byte in a `data` line that is not UTF-8.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<Vec<String>, usize> {
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
                    self.end_line(&line, &mut events)?;
                }
                _ => self.line.push(b),
            }
        }
        Ok(events)
    }

    fn end_line(&mut self, line: &[u8], events: &mut Vec<String>) -> Result<(), usize> {
        if line.is_empty() {
            if let Some(d) = self.data.take() {
                events.push(d);
            }
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match line.iter().position(|&c| c == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        if field == b"data" {
            let v = std::str::from_utf8(value).map_err(|e| e.valid_up_to())?;
            match &mut self.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(v);
                }
                None => self.data = Some(v.to_string()),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_and_line_endings() {
        let mut p = SseParser::default();
        let mut got = p.feed(b"data: {\"a\"").unwrap();
        got.extend(p.feed(b":1}\r").unwrap());
        got.extend(
            p.feed(b"\n\r\n: keep-alive\n\ndata:x\ndata: y\n\nevent: e\nda")
                .unwrap(),
        );
        got.extend(p.feed(b"ta: \xc3").unwrap());
        got.extend(p.feed(b"\xa9\n\n").unwrap());
        assert_eq!(got, vec!["{\"a\":1}", "x\ny", "é"]);
    }

    #[test]
    fn unterminated_event_is_not_dispatched() {
        let mut p = SseParser::default();
        assert!(p.feed(b"data: partial").unwrap().is_empty());
        assert!(p.feed(b"\n").unwrap().is_empty());
    }

    #[test]
    fn invalid_utf8_in_data_is_an_error_not_lossy() {
        let mut p = SseParser::default();
        assert_eq!(p.feed(b"data: ok\xff\xfe\n\n"), Err(2));
        // A comment line is never decoded, so its bytes do not matter.
        let mut p = SseParser::default();
        assert_eq!(p.feed(b": \xff\ndata: x\n\n"), Ok(vec!["x".to_string()]));
    }
}
