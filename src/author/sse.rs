//! A small server-sent-events parser (the WHATWG event-stream format): lines end in LF, CR
//! or CRLF (also split across chunks); `data:` lines accumulate (joined by LF) until a blank
//! line dispatches the event; a single space after the colon is dropped; comment lines
//! (starting with `:`) and other fields are ignored. Bytes are decoded as UTF-8 per line, so
//! a multi-byte character split across chunks is kept whole; a `data` line that is not
//! UTF-8 is an error (the caller's `bad-response`), never decoded lossily. A line or an
//! event longer than [`MAX_RESPONSE_BYTES`] is an error too: a stream that never ends a line
//! is not kept whole in memory.

use crate::limits::MAX_RESPONSE_BYTES;

/// Why a stream is not read further.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SseError {
    /// A `data` line that is not UTF-8, with the offset of its first invalid byte.
    NotUtf8(usize),
    /// A line or an event's data past [`MAX_RESPONSE_BYTES`].
    TooLong,
}

/// Incremental parser: feed chunks, collect dispatched event data.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    data: Option<String>,
    last_was_cr: bool,
}

impl SseParser {
    /// Feed bytes; returns the data of every event completed by them, or why the stream is
    /// not read further ([`SseError`]).
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<Vec<String>, SseError> {
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
                _ => {
                    if self.line.len() >= MAX_RESPONSE_BYTES {
                        return Err(SseError::TooLong);
                    }
                    self.line.push(b)
                }
            }
        }
        Ok(events)
    }

    fn end_line(&mut self, line: &[u8], events: &mut Vec<String>) -> Result<(), SseError> {
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
            let v = std::str::from_utf8(value).map_err(|e| SseError::NotUtf8(e.valid_up_to()))?;
            if self.data.as_ref().map_or(0, String::len) + v.len() >= MAX_RESPONSE_BYTES {
                return Err(SseError::TooLong);
            }
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

    /// A line that never ends, or an event whose `data` lines never end it, is refused at
    /// the limit rather than kept whole.
    #[test]
    fn a_line_or_an_event_past_the_limit_is_an_error() {
        let mut p = SseParser::default();
        let chunk = vec![b'x'; 64 * 1024];
        let mut got = Ok(Vec::new());
        for _ in 0..=MAX_RESPONSE_BYTES / chunk.len() {
            got = p.feed(&chunk);
            if got.is_err() {
                break;
            }
        }
        assert_eq!(got, Err(SseError::TooLong));
        assert!(p.line.len() <= MAX_RESPONSE_BYTES);
        let mut p = SseParser::default();
        let line = format!("data: {}\n", "y".repeat(1024 * 1024));
        let mut got = Ok(Vec::new());
        for _ in 0..=MAX_RESPONSE_BYTES / line.len() {
            got = p.feed(line.as_bytes());
            if got.is_err() {
                break;
            }
        }
        assert_eq!(got, Err(SseError::TooLong));
    }

    #[test]
    fn invalid_utf8_in_data_is_an_error_not_lossy() {
        let mut p = SseParser::default();
        assert_eq!(p.feed(b"data: ok\xff\xfe\n\n"), Err(SseError::NotUtf8(2)));
        // A comment line is never decoded, so its bytes do not matter.
        let mut p = SseParser::default();
        assert_eq!(p.feed(b": \xff\ndata: x\n\n"), Ok(vec!["x".to_string()]));
    }
}
