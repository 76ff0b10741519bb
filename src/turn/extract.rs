//! Forgiving extraction (TURNS.md §1.1) and journal lifting (§1.2).
//!
//! Extraction strips one fenced block if the reply has one (```` ```kestrel ````, ```` ``` ````
//! with any info string, or `~~~`), else takes the whole reply; the result is trimmed. It never
//! looks for "the first `{` to the last `}`": JSON is recognised only when the extracted body
//! itself starts with `{` (or the fence says `json`).

/// Where the document was found inside the reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted<'a> {
    /// The trimmed body: the text that is routed.
    pub body: &'a str,
    /// Byte offset of `body` in the reply (for mapping error positions back to the reply).
    pub start: usize,
    /// The fence the body came from, if any.
    pub fence: Option<Fence>,
}

/// A fenced block that was stripped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    /// The info string after the opening marker (`kestrel`, `json`, or empty), lower-cased.
    pub info: String,
    /// Whether a closing marker was found. An unclosed fence is a sign of a cut-off reply.
    pub closed: bool,
}

impl Extracted<'_> {
    /// Lines before the body in the reply (0 when the body starts on the reply's first line).
    pub fn line_offset(&self, reply: &str) -> usize {
        reply
            .get(..self.start)
            .map(|s| s.bytes().filter(|b| *b == b'\n').count())
            .unwrap_or(0)
    }

    /// Characters before the body on its first line (trimmed indentation, for columns).
    pub fn col_offset(&self, reply: &str) -> usize {
        let before = reply.get(..self.start).unwrap_or("");
        let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
        before[line_start..].chars().count()
    }

    /// Did the body come from a fence marked `json`?
    pub fn fenced_json(&self) -> bool {
        self.fence.as_ref().is_some_and(|f| f.info == "json")
    }
}

/// One line of the reply with its byte offset.
struct Line<'a> {
    start: usize,
    text: &'a str,
}

fn lines(s: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    for piece in s.split_inclusive('\n') {
        let text = piece.strip_suffix('\n').unwrap_or(piece);
        let text = text.strip_suffix('\r').unwrap_or(text);
        out.push(Line { start, text });
        start += piece.len();
    }
    out
}

/// An opening fence: (marker char, marker length, info string).
fn fence_open(line: &str) -> Option<(char, usize, String)> {
    let t = line.trim_start();
    let c = t.chars().next()?;
    if c != '`' && c != '~' {
        return None;
    }
    let n = t.chars().take_while(|x| *x == c).count();
    if n < 3 {
        return None;
    }
    let info = t[n..].trim();
    // A backtick fence's info string may not contain backticks (CommonMark).
    if c == '`' && info.contains('`') {
        return None;
    }
    let info = info
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    Some((c, n, info))
}

fn fence_close(line: &str, c: char, n: usize) -> bool {
    let t = line.trim();
    !t.is_empty() && t.chars().all(|x| x == c) && t.chars().count() >= n
}

/// Trim a slice of `reply` (given by byte range) and return the trimmed body with its start.
fn trimmed(reply: &str, start: usize, end: usize) -> (&str, usize) {
    let raw = &reply[start..end];
    let lead = raw.len() - raw.trim_start().len();
    (raw.trim(), start + lead)
}

/// Extract the document from a reply.
///
/// With several fenced blocks, the first one tagged `kestrel` wins, else the first block.
/// An opening fence without a closing one takes the rest of the reply (and is marked
/// unclosed).
pub fn extract(reply: &str) -> Extracted<'_> {
    let ls = lines(reply);
    let mut blocks: Vec<(usize, usize, Fence)> = Vec::new();
    let mut i = 0;
    while i < ls.len() {
        if let Some((c, n, info)) = fence_open(ls[i].text) {
            let body_start = ls.get(i + 1).map(|l| l.start).unwrap_or(reply.len());
            let mut j = i + 1;
            let mut end = None;
            while j < ls.len() {
                if fence_close(ls[j].text, c, n) {
                    end = Some(j);
                    break;
                }
                j += 1;
            }
            match end {
                Some(j) => {
                    blocks.push((body_start, ls[j].start, Fence { info, closed: true }));
                    i = j + 1;
                }
                None => {
                    blocks.push((
                        body_start,
                        reply.len(),
                        Fence {
                            info,
                            closed: false,
                        },
                    ));
                    break;
                }
            }
        } else {
            i += 1;
        }
    }
    let pick = blocks
        .iter()
        .position(|(_, _, f)| f.info == "kestrel")
        .or(if blocks.is_empty() { None } else { Some(0) });
    match pick {
        Some(k) => {
            let (s, e, fence) = blocks.swap_remove(k);
            let (body, start) = trimmed(reply, s, e.max(s));
            Extracted {
                body,
                start,
                fence: Some(fence),
            }
        }
        None => {
            let (body, start) = trimmed(reply, 0, reply.len());
            Extracted {
                body,
                start,
                fence: None,
            }
        }
    }
}

/// Is this line an own-line comment (only whitespace before its `#`)?
pub fn is_comment_line(line: &str) -> bool {
    line.trim_start().starts_with('#')
}

/// The journal text of one own-line comment: without the `#` and one following space, and
/// without trailing whitespace.
pub fn journal_line(line: &str) -> String {
    let t = line.trim_start();
    let t = t.strip_prefix('#').unwrap_or(t);
    let t = t.strip_prefix(' ').unwrap_or(t);
    t.trim_end().to_string()
}

/// Lift the journal: every own-line `#` comment, in order. (They stay in the document.)
pub fn lift_journal(body: &str) -> Vec<String> {
    body.lines()
        .filter(|l| is_comment_line(l))
        .map(journal_line)
        .collect()
}

/// Does the body hold anything besides comments and blank lines?
pub fn has_code(body: &str) -> bool {
    body.lines()
        .any(|l| !l.trim().is_empty() && !is_comment_line(l))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_body_trimmed() {
        let r = "\n\n  PLAN x\n\n";
        let e = extract(r);
        assert_eq!(e.body, "PLAN x");
        assert_eq!(e.line_offset(r), 2);
        assert_eq!(e.col_offset(r), 2);
        assert!(e.fence.is_none());
    }

    #[test]
    fn fence_kestrel_preferred() {
        let r = "prose\n```json\n{}\n```\nmore\n```kestrel\nSTAND-DOWN x\n```\n";
        let e = extract(r);
        assert_eq!(e.body, "STAND-DOWN x");
        assert_eq!(e.line_offset(r), 6);
    }

    #[test]
    fn tilde_and_unclosed() {
        assert_eq!(extract("~~~\nA\n~~~").body, "A");
        let e = extract("```kestrel\nPLAN x\n  WHEN");
        assert_eq!(e.body, "PLAN x\n  WHEN");
        assert_eq!(e.fence.map(|f| f.closed), Some(false));
    }

    #[test]
    fn journal() {
        let j = lift_journal("# a\nPLAN x # no\n  #  b \n#\n");
        assert_eq!(j, vec!["a", " b", ""]);
    }
}
