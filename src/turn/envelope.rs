//! The legacy JSON envelope, for forgiving ingest and as a token projection (TURNS.md §4).
//!
//! Accepted shapes (the `authoring-v1` wire, one flat object with a `kind` discriminator):
//!
//! ```text
//! {"journal": "...", "actions": [
//!     {"kind": "supersede",    "document": "PLAN ..."},
//!     {"kind": "standDown",    "reason": "..."},
//!     {"kind": "scheduleWake", "wake": "WAKE ..."},        (or "document")
//!     {"kind": "requestView",  "view": "VIEW ...", "reason": "..."},
//!     {"kind": "cancel",       "target": "name"}]}
//! {"requestView": {"view": "VIEW ...", "reason": "..."}}
//! ```
//!
//! [`ingest`] normalises an envelope to the Kestrel text of the same turn (journal as own-line
//! comments, a request's `VIEW` as `SHOW VIEW` with its reason as the trailing comment), which
//! the router then routes like any Kestrel reply, so the turn is logged as canonical Kestrel,
//! never as JSON. [`project`] goes the other way for the token meter: the same turn printed as
//! the envelope.

use super::{Outcome, RoutedTurn};
use crate::lang::{
    self,
    ast::{StatementKind, Trivia},
};
use serde_json::{Map, Value, json};

/// Why an envelope was not ingested.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IngestError {
    /// JSON cut off mid-way (unbalanced at the end of the text).
    Truncated(String),
    /// Not JSON, or valid JSON of another shape; the message names the expected keys.
    Invalid(String),
}

/// The expected shapes, for messages.
pub const EXPECTED: &str = r#"{"journal": "...", "actions": [{"kind": "supersede", "document": "PLAN ..."}]} (kinds: supersede with document, standDown with reason, scheduleWake with wake, requestView with view and reason, cancel with target) or {"requestView": {"view": "VIEW ...", "reason": "..."}}"#;

fn shape_error(found: &str) -> IngestError {
    IngestError::Invalid(format!(
        "valid JSON but not a turn ({found}): expected {EXPECTED}; better, reply with the Kestrel document itself, no JSON"
    ))
}

fn keys(m: &Map<String, Value>) -> String {
    let ks: Vec<&str> = m.keys().map(String::as_str).collect();
    if ks.is_empty() {
        "an empty object".to_string()
    } else {
        format!("found keys: {}", ks.join(", "))
    }
}

fn comment_lines(out: &mut String, text: &str) {
    for l in text.lines() {
        let l = l.trim_end();
        if l.is_empty() {
            out.push_str("#\n");
        } else {
            out.push_str("# ");
            out.push_str(l);
            out.push('\n');
        }
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn str_field<'a>(m: &'a Map<String, Value>, k: &str) -> Result<Option<&'a str>, IngestError> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(IngestError::Invalid(format!(
            "the envelope's `{k}` must be a string; expected {EXPECTED}"
        ))),
    }
}

fn push_block(out: &mut String, text: &str) {
    let t = text.trim_matches('\n');
    out.push_str(t.trim_end());
    out.push('\n');
}

/// A request's view text as a `SHOW VIEW` block with the reason as its trailing comment.
fn show_view(out: &mut String, view: &str, reason: Option<&str>) -> Result<(), IngestError> {
    let v = view.trim();
    let v = if v.starts_with("SHOW VIEW") {
        v.to_string()
    } else if v.starts_with("VIEW") {
        format!("SHOW {v}")
    } else {
        return Err(IngestError::Invalid(format!(
            "requestView.view must be a VIEW statement (`VIEW <name> [budget <n>]` with panes on indented lines); expected {EXPECTED}"
        )));
    };
    let mut lines = v.lines();
    let head = lines.next().unwrap_or_default().trim_end();
    out.push_str(head);
    if let Some(r) = reason.map(one_line).filter(|r| !r.is_empty())
        && !head.contains('#')
    {
        out.push_str(" # ");
        out.push_str(&r);
    }
    out.push('\n');
    for l in lines {
        out.push_str(l.trim_end());
        out.push('\n');
    }
    Ok(())
}

fn action(out: &mut String, a: &Value) -> Result<(), IngestError> {
    let Value::Object(m) = a else {
        return Err(shape_error("an action that is not an object"));
    };
    let kind = str_field(m, "kind")?.unwrap_or("");
    match kind {
        "supersede" => {
            let d = str_field(m, "document")?.ok_or_else(|| {
                IngestError::Invalid(format!(
                    "a supersede action needs its `document` (the Kestrel text); expected {EXPECTED}"
                ))
            })?;
            push_block(out, d);
        }
        "scheduleWake" => {
            let d = str_field(m, "wake")?
                .or(str_field(m, "document")?)
                .ok_or_else(|| {
                    IngestError::Invalid(format!(
                        "a scheduleWake action needs its `wake` (a WAKE statement); expected {EXPECTED}"
                    ))
                })?;
            push_block(out, d);
        }
        "standDown" => {
            let r = str_field(m, "reason")?.map(one_line).unwrap_or_default();
            if r.is_empty() {
                out.push_str("STAND-DOWN\n");
            } else {
                out.push_str("STAND-DOWN ");
                out.push_str(&r);
                out.push('\n');
            }
        }
        "requestView" => {
            let v = str_field(m, "view")?.unwrap_or("");
            show_view(out, v, str_field(m, "reason")?)?;
        }
        "cancel" | "cancelOrder" => {
            let t = str_field(m, "target")?
                .or(str_field(m, "ref")?)
                .unwrap_or("");
            out.push_str("CANCEL ");
            out.push_str(t.trim());
            out.push('\n');
        }
        other => {
            return Err(IngestError::Invalid(format!(
                "unknown action kind `{other}`: the kinds are supersede, standDown, scheduleWake, requestView and cancel; expected {EXPECTED}"
            )));
        }
    }
    Ok(())
}

/// Normalise a JSON envelope (fences already stripped) to the Kestrel text of the same turn.
pub fn ingest(body: &str) -> Result<String, IngestError> {
    let v: Value = match serde_json::from_str(body) {
        Ok(v) => v,
        Err(e) if e.is_eof() => {
            return Err(IngestError::Truncated(format!(
                "the JSON reply is cut off mid-way (unbalanced at the end of the text, {e}): the reply was truncated; write the whole turn, better as a plain Kestrel document"
            )));
        }
        Err(e) => {
            return Err(IngestError::Invalid(format!(
                "the reply starts with `{{` but is not valid JSON ({e}): reply with a Kestrel document (no JSON), or with {EXPECTED}"
            )));
        }
    };
    let Value::Object(m) = &v else {
        return Err(shape_error("not an object"));
    };
    let mut out = String::new();
    if let Some(j) = str_field(m, "journal")? {
        comment_lines(&mut out, j);
    }
    if let Some(rv) = m.get("requestView") {
        let Value::Object(r) = rv else {
            return Err(shape_error("requestView is not an object"));
        };
        show_view(
            &mut out,
            str_field(r, "view")?.unwrap_or(""),
            str_field(r, "reason")?,
        )?;
        if let Some(Value::Array(a)) = m.get("actions")
            && !a.is_empty()
        {
            return Err(IngestError::Invalid(
                "requestView and actions in one envelope: a view request is the whole turn; send the actions after the view is shown".into(),
            ));
        }
        return Ok(out);
    }
    match m.get("actions") {
        Some(Value::Array(actions)) => {
            for a in actions {
                action(&mut out, a)?;
            }
            Ok(out)
        }
        Some(_) => Err(shape_error("actions is not an array")),
        None => Err(shape_error(&keys(m))),
    }
}

/// Print a document with its own-line comments removed (they travel as the journal) and
/// SHOW VIEW turned back into a bare VIEW; trailing comments are dropped when `drop_trailing`.
fn strip_comments(text: &str, drop_trailing: bool) -> Option<String> {
    let mut doc = lang::parse(text).ok()?;
    let keep = |t: &mut Vec<Trivia>| t.retain(|x| !matches!(x, Trivia::Comment(_)));
    keep(&mut doc.tail);
    for st in &mut doc.statements {
        keep(&mut st.leading);
        if drop_trailing {
            st.trailing = None;
        }
        match &mut st.kind {
            StatementKind::Plan(p) => {
                for c in &mut p.clauses {
                    keep(&mut c.leading);
                }
            }
            StatementKind::View(v) => {
                for p in &mut v.panes {
                    keep(&mut p.leading);
                }
            }
            StatementKind::ShowView(v) => {
                let mut v = v.clone();
                for p in &mut v.panes {
                    keep(&mut p.leading);
                    if drop_trailing {
                        p.trailing = None;
                    }
                }
                st.kind = StatementKind::View(v);
            }
            StatementKind::Grade(g) => {
                for c in &mut g.clauses {
                    keep(&mut c.leading);
                }
            }
            _ => {}
        }
    }
    // Blank lines left where comments were collapse as the printer would.
    let printed = lang::print(&doc);
    Some(printed.trim_start_matches('\n').to_string())
}

/// The document string a supersede envelope would carry (no own-line comments, no final
/// newline): what the escaping cost is measured on.
pub fn document_payload(turn: &RoutedTurn) -> Option<String> {
    match &turn.outcome {
        Outcome::Supersede { .. } => {
            strip_comments(&turn.kestrel, false).map(|s| s.trim_end_matches('\n').to_string())
        }
        _ => None,
    }
}

/// The same turn printed as the compact JSON envelope (`None` for turns with nothing to
/// project: invalid, truncated, provider-error, the fail-closed pass).
pub fn project(turn: &RoutedTurn) -> Option<String> {
    let journal = turn.journal_text();
    let actions = match &turn.outcome {
        Outcome::Supersede { .. } => {
            vec![json!({"kind": "supersede", "document": document_payload(turn)?})]
        }
        Outcome::StandDown { reason } => vec![json!({"kind": "standDown", "reason": reason})],
        Outcome::Cancel { target } => vec![json!({"kind": "cancel", "target": target})],
        Outcome::Pass { fail_closed: false } => vec![],
        Outcome::ViewRequest { reason, .. } => {
            let view = strip_comments(&turn.kestrel, true)?;
            let view = view.trim_end_matches('\n');
            // Field order as the legacy wire wrote it: view, then reason. A journal that is
            // more than the reason rides beside the request.
            let mut body = String::from("{");
            let reason_text = reason.clone().unwrap_or_default();
            let journal_one = journal.split_whitespace().collect::<Vec<_>>().join(" ");
            if !journal.is_empty() && journal_one != reason_text {
                body.push_str(&format!(r#""journal":{},"#, Value::String(journal.clone())));
            }
            body.push_str(&format!(
                r#""requestView":{{"view":{}"#,
                Value::String(view.to_string())
            ));
            if let Some(r) = reason {
                body.push_str(&format!(r#","reason":{}"#, Value::String(r.clone())));
            }
            body.push_str("}}");
            return Some(body);
        }
        _ => return None,
    };
    // Key order as the legacy wire wrote it: journal, actions; kind first in each action.
    let mut s = format!(r#"{{"journal":{},"actions":["#, Value::String(journal));
    for (i, a) in actions.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let Value::Object(m) = a else { continue };
        s.push('{');
        let mut first = true;
        let kind = m.get("kind").cloned().unwrap_or(Value::Null);
        for (k, v) in std::iter::once(("kind", &kind)).chain(
            m.iter()
                .filter(|(k, _)| k.as_str() != "kind")
                .map(|(k, v)| (k.as_str(), v)),
        ) {
            if !first {
                s.push(',');
            }
            first = false;
            s.push_str(&Value::String(k.to_string()).to_string());
            s.push(':');
            s.push_str(&v.to_string());
        }
        s.push('}');
    }
    s.push_str("]}");
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ingest_shapes() {
        let k = ingest(r#"{"journal":"a\nb","actions":[{"kind":"standDown","reason":"x  y"}]}"#);
        assert_eq!(k, Ok("# a\n# b\nSTAND-DOWN x y\n".to_string()));
        let k = ingest(r#"{"requestView":{"view":"VIEW p\n  tape 5m","reason":"r"}}"#);
        assert_eq!(k, Ok("SHOW VIEW p # r\n  tape 5m\n".to_string()));
        assert!(matches!(
            ingest(r#"{"a":1"#),
            Err(IngestError::Truncated(_))
        ));
        assert!(matches!(ingest(r#"{"a":1}"#), Err(IngestError::Invalid(_))));
        assert!(matches!(
            ingest(r#"{"a":1} x"#),
            Err(IngestError::Invalid(_))
        ));
        assert!(matches!(ingest("[1]"), Err(IngestError::Invalid(_))));
    }
}
