//! The canonical printer (LANGUAGE.md §5). `print(parse(x)) == x` for canonical `x`.

use super::ast::*;
use std::fmt::Write;

/// Print a document in canonical form.
pub fn print(doc: &Document) -> String {
    let mut out = String::with_capacity(256);
    for st in &doc.statements {
        print_statement(&mut out, st);
    }
    trivia(&mut out, &doc.tail);
    out
}

/// [`print`] written to `w` as it is printed, a statement at a time (the bytes of
/// [`print`], without the whole text in memory: `kestrel print` of a large document).
pub fn print_to<W: std::io::Write + ?Sized>(doc: &Document, w: &mut W) -> std::io::Result<()> {
    const CHUNK: usize = 1 << 16;
    let mut out = String::with_capacity(CHUNK + 4096);
    for st in &doc.statements {
        print_statement(&mut out, st);
        if out.len() >= CHUNK {
            w.write_all(out.as_bytes())?;
            out.clear();
        }
    }
    trivia(&mut out, &doc.tail);
    w.write_all(out.as_bytes())
}

/// Print one statement (with its leading trivia) in canonical form.
pub fn print_statement(out: &mut String, st: &Statement) {
    trivia(out, &st.leading);
    head(out, &st.kind);
    end_line(out, &st.trailing);
    match &st.kind {
        StatementKind::Plan(p) => {
            for c in &p.clauses {
                trivia(out, &c.leading);
                out.push_str("  ");
                clause(out, &c.kind);
                end_line(out, &c.trailing);
            }
        }
        StatementKind::View(v) | StatementKind::ShowView(v) => {
            for p in &v.panes {
                trivia(out, &p.leading);
                out.push_str("  ");
                pane(out, &p.pane);
                end_line(out, &p.trailing);
            }
        }
        StatementKind::Grade(g) => {
            for c in &g.clauses {
                trivia(out, &c.leading);
                out.push_str("  ");
                match &c.kind {
                    GradeClauseKind::Vs(Counterfactual::Null) => out.push_str("VS null"),
                    GradeClauseKind::Vs(Counterfactual::Ungated) => out.push_str("VS ungated"),
                    GradeClauseKind::By(k) => {
                        out.push_str("BY ");
                        out.push_str(k);
                    }
                }
                end_line(out, &c.trailing);
            }
        }
        _ => {}
    }
}

pub(crate) fn trivia(out: &mut String, t: &[Trivia]) {
    for x in t {
        match x {
            Trivia::Blank => out.push('\n'),
            Trivia::Comment(c) => {
                out.push_str(c);
                out.push('\n');
            }
        }
    }
}

fn end_line(out: &mut String, t: &Option<TrailingComment>) {
    if let Some(t) = t {
        out.push_str(&t.gap);
        out.push_str(&t.text);
    }
    out.push('\n');
}

fn head(out: &mut String, k: &StatementKind) {
    match k {
        StatementKind::Import(i) => {
            let _ = write!(out, "IMPORT {} FROM {}", i.name.text, i.path);
        }
        StatementKind::Using(u) => {
            out.push_str("USING ");
            using(out, u);
        }
        StatementKind::View(v) => {
            out.push_str("VIEW ");
            view_head(out, v);
        }
        StatementKind::ShowView(v) => {
            out.push_str("SHOW VIEW ");
            view_head(out, v);
        }
        StatementKind::Wake(w) => {
            let _ = write!(out, "WAKE {} WHEN ", w.name.text);
            trigger(out, &w.when);
            if let Some(d) = &w.deliver {
                let _ = write!(out, " DELIVER {}", d.text);
            }
            if let Some(p) = &w.priority {
                let _ = write!(out, " PRIORITY {}", p.text);
            }
            if let Some(b) = &w.budget {
                let _ = write!(out, " BUDGET {} wakes/day", b.text);
            }
        }
        StatementKind::Plan(p) => {
            let _ = write!(out, "PLAN {} budget {}R ttl ", p.name.text, p.budget.text);
            match &p.ttl {
                Ttl::At(c) => clock(out, c),
                Ttl::After(d) => {
                    out.push('+');
                    dur(out, d);
                }
            }
            if let Some(r) = &p.regime {
                out.push_str(" regime {");
                for (n, e) in r.iter().enumerate() {
                    if n > 0 {
                        out.push_str(", ");
                    }
                    let _ = write!(out, "{}: {}", e.key, e.value);
                }
                out.push('}');
            }
            if let Some(pr) = &p.priority {
                let _ = write!(out, " priority {}", pr.text);
            }
        }
        StatementKind::Pod(p) => {
            let _ = write!(
                out,
                "POD {} RISK day-loss {}R -> halt",
                p.name.text, p.day_loss.text
            );
        }
        StatementKind::Book(b) => {
            let _ = write!(
                out,
                "BOOK {} budget {}R coverage ",
                b.name.text, b.budget.text
            );
            for (n, s) in b.coverage.iter().enumerate() {
                if n > 0 {
                    out.push_str(", ");
                }
                out.push_str(&s.text);
            }
        }
        StatementKind::Grade(g) => {
            let subject = match g.subject {
                GradeSubject::Plan => "plan",
                GradeSubject::Wake => "wake",
                GradeSubject::View => "view",
                GradeSubject::Pod => "pod",
            };
            let _ = write!(out, "GRADE {subject} {} OVER ", g.name.text);
            match &g.over {
                GradeRange::Glob(s) => out.push_str(s),
                GradeRange::Months { from, to } => {
                    out.push_str(from);
                    if let Some(t) = to {
                        out.push_str("..");
                        out.push_str(t);
                    }
                }
            }
            let _ = write!(out, " FILL {}", g.fill);
        }
        StatementKind::StandDown(s) => {
            out.push_str("STAND-DOWN");
            if !s.reason.is_empty() {
                out.push(' ');
                out.push_str(&s.reason);
            }
        }
        StatementKind::Cancel(c) => {
            let _ = write!(out, "CANCEL {}", c.target.text);
        }
    }
}

fn view_head(out: &mut String, v: &View) {
    out.push_str(&v.name.text);
    if let Some(b) = &v.budget {
        let _ = write!(out, " budget {}", b.text);
    }
}

fn using(out: &mut String, u: &Using) {
    let _ = write!(out, "signal {} exec {}", u.signal.text, u.exec.text);
    if let Some(e) = &u.expiry {
        out.push(' ');
        expiry(out, e);
    }
}

fn expiry(out: &mut String, e: &Expiry) {
    match e {
        Expiry::Dte(n) => {
            let _ = write!(out, "{n}dte");
        }
        Expiry::Date(d) => out.push_str(d),
    }
}

fn clock(out: &mut String, c: &Clock) {
    let _ = write!(out, "{:02}:{:02}", c.hour, c.minute);
}

fn dur(out: &mut String, d: &Dur) {
    out.push_str(&d.text);
    out.push(match d.unit {
        DurUnit::S => 's',
        DurUnit::M => 'm',
        DurUnit::H => 'h',
    });
}

fn pane(out: &mut String, p: &Pane) {
    let last = |out: &mut String, l: &Option<Num>| {
        if let Some(n) = l {
            let _ = write!(out, " last {}", n.text);
        }
    };
    match p {
        Pane::Tape { bar } => {
            out.push_str("tape");
            if let Some(b) = bar {
                out.push(' ');
                dur(out, b);
            }
        }
        Pane::Levels => out.push_str("levels"),
        Pane::Chain { expiry: e, strikes } => {
            out.push_str("chain ");
            expiry(out, e);
            if let Some(s) = strikes {
                let _ = write!(out, " strikes {}", s.text);
            }
        }
        Pane::Gex { expiry: e } => {
            out.push_str("gex ");
            expiry(out, e);
        }
        Pane::Skew { delta } => {
            let _ = write!(out, "skew {}d", delta.text);
        }
        Pane::Velocity { window } => {
            out.push_str("velocity ");
            dur(out, window);
        }
        Pane::Kernel => out.push_str("kernel"),
        Pane::Plans => out.push_str("plans"),
        Pane::Blotter { last: l } => {
            out.push_str("blotter");
            last(out, l);
        }
        Pane::Journal { last: l } => {
            out.push_str("journal");
            last(out, l);
        }
        Pane::Headlines { last: l } => {
            out.push_str("headlines");
            last(out, l);
        }
    }
}

/// Print one PLAN clause (without indentation or newline).
pub fn clause(out: &mut String, c: &ClauseKind) {
    match c {
        ClauseKind::Using(u) => {
            out.push_str("USING ");
            using(out, u);
        }
        ClauseKind::When(t) => {
            out.push_str("WHEN ");
            trigger(out, t);
        }
        ClauseKind::Do(t) => {
            out.push_str("DO ");
            ticket(out, t);
        }
        ClauseKind::Also(t) => {
            out.push_str("ALSO ");
            ticket(out, t);
        }
        ClauseKind::Reload { when, ticket: t } => {
            out.push_str("RELOAD WHEN ");
            trigger(out, when);
            out.push(' ');
            ticket(out, t);
        }
        ClauseKind::Tp {
            mult,
            frac,
            price: p,
            modifiers: m,
        } => {
            let _ = write!(out, "TP {}x", mult.text);
            if let Some(f) = frac {
                let _ = write!(out, " frac {}", f.text);
            }
            out.push_str(" @ ");
            price(out, p);
            modifiers(out, m);
        }
        ClauseKind::Exit {
            when,
            price: p,
            modifiers: m,
        } => {
            out.push_str("EXIT ");
            trigger(out, when);
            if let Some(p) = p {
                out.push_str(" @ ");
                price(out, p);
                modifiers(out, m);
            }
        }
        ClauseKind::Invalidate { when, action } => {
            out.push_str("INVALIDATE ");
            trigger(out, when);
            match action {
                None => {}
                Some(InvalidateAction::Halt) => out.push_str(" -> halt"),
                Some(InvalidateAction::HaltRide) => out.push_str(" -> halt, ride"),
            }
        }
        ClauseKind::CancelIf(t) => {
            out.push_str("CANCEL-IF ");
            trigger(out, t);
        }
        ClauseKind::Arm(n) => {
            out.push_str("ARM ");
            out.push_str(&n.text);
        }
    }
}

/// Print a ticket.
pub fn ticket(out: &mut String, t: &Ticket) {
    out.push_str(match t.side {
        Side::Buy => "buy ",
        Side::Sell => "sell ",
    });
    out.push_str(&t.qty.text);
    out.push(' ');
    match &t.instrument {
        Instrument::Shares => out.push_str("shares"),
        Instrument::Option { strike, right } => {
            match strike {
                Strike::Atm => out.push_str("ATM"),
                Strike::Relative(n) | Strike::Absolute(n) => out.push_str(&n.text),
            }
            out.push_str(match right {
                Right::C => " C",
                Right::P => " P",
            });
        }
    }
    out.push_str(" @ ");
    price(out, &t.price);
    modifiers(out, &t.modifiers);
}

fn modifiers(out: &mut String, m: &[Modifier]) {
    for m in m {
        out.push(' ');
        match m {
            Modifier::Peg => out.push_str("peg"),
            Modifier::Fix => out.push_str("fix"),
            Modifier::Esc { price: p, after } => {
                out.push_str("esc ");
                price(out, p);
                out.push(' ');
                dur(out, after);
            }
            Modifier::Cap { price: p } => {
                out.push_str("cap ");
                price(out, p);
            }
            Modifier::Floor { price: p } => {
                out.push_str("floor ");
                price(out, p);
            }
            Modifier::CancelIf { when } => {
                out.push_str("cancel-if ");
                trigger(out, when);
            }
        }
    }
}

/// Print a price.
pub fn price(out: &mut String, p: &Price) {
    match p {
        Price::Anchor { anchor, offset } => {
            out.push_str(&anchor.text);
            if let Some(o) = offset {
                out.push(if o.negative { '-' } else { '+' });
                out.push_str(&o.amount.text);
                match o.unit {
                    OffsetUnit::Price => {}
                    OffsetUnit::Cents => out.push('c'),
                    OffsetUnit::Percent => out.push('%'),
                }
            }
        }
        Price::Number { value } => out.push_str(&value.text),
        Price::Stub { text, .. } => out.push_str(text),
        Price::Lean { a, b, w, .. } => {
            out.push_str("lean(");
            price(out, a);
            out.push_str(", ");
            price(out, b);
            out.push_str(", ");
            out.push_str(&w.text);
            out.push(')');
        }
        Price::Min { a, b, .. } | Price::Max { a, b, .. } => {
            out.push_str(if matches!(p, Price::Min { .. }) {
                "min("
            } else {
                "max("
            });
            price(out, a);
            out.push_str(", ");
            price(out, b);
            out.push(')');
        }
    }
}

/// Print a trigger.
pub fn trigger(out: &mut String, t: &Trigger) {
    match t {
        Trigger::Or { terms } | Trigger::And { terms } => {
            let sep = if matches!(t, Trigger::Or { .. }) {
                " OR "
            } else {
                " AND "
            };
            for (n, x) in terms.iter().enumerate() {
                if n > 0 {
                    out.push_str(sep);
                }
                trigger(out, x);
            }
        }
        Trigger::Not { inner } => {
            out.push_str("NOT ");
            trigger(out, inner);
        }
        Trigger::Group { inner } => {
            out.push('(');
            trigger(out, inner);
            out.push(')');
        }
        Trigger::Pred { pred } => predicate(out, pred),
    }
}

fn predicate(out: &mut String, p: &Predicate) {
    match p {
        Predicate::Cross {
            series: s,
            dir,
            value: v,
            held,
            ..
        } => {
            series(out, s);
            out.push_str(match dir {
                CrossDir::Above => " crosses above ",
                CrossDir::Below => " crosses below ",
            });
            value(out, v);
            if let Some(h) = held {
                out.push_str(" held ");
                dur(out, h);
            }
        }
        Predicate::Compare {
            series: s,
            op,
            value: v,
            held,
            ..
        } => {
            series(out, s);
            out.push(' ');
            out.push_str(op.as_str());
            out.push(' ');
            value(out, v);
            if let Some(h) = held {
                out.push_str(" held ");
                dur(out, h);
            }
        }
        Predicate::Event { event, within, .. } => {
            match event {
                Event::PlanFired { plan } => {
                    let _ = write!(out, "plan({}).fired", plan.text);
                }
                Event::PlanFilled { plan } => {
                    let _ = write!(out, "plan({}).filled", plan.text);
                }
                Event::Headline => out.push_str("headline"),
            }
            if let Some(w) = within {
                out.push_str(" within ");
                dur(out, w);
            }
        }
        Predicate::TMinus { minutes, .. } => {
            out.push_str("T-");
            out.push_str(&minutes.text);
        }
        Predicate::Phase { phase, .. } => out.push_str(match phase {
            Phase::Open => "phase open",
            Phase::Close => "phase close",
        }),
    }
}

/// Print a series reference.
pub fn series(out: &mut String, s: &Series) {
    out.push_str(&s.text);
    if let SeriesKind::Velocity { window } = &s.kind {
        out.push('(');
        dur(out, window);
        out.push(')');
    }
}

fn value(out: &mut String, v: &Value) {
    match v {
        Value::Number { value } => out.push_str(&value.text),
        Value::Clock { clock: c } => clock(out, c),
        Value::Series { series: s } => series(out, s),
        Value::Percentile { pct } => {
            out.push('p');
            out.push_str(&pct.text);
        }
    }
}

/// A trigger as canonical text (for messages, the Plans pane and the Bus).
/// A plan's `ttl` as written after the keyword: `14:45`, `+30m`.
pub fn ttl_text(t: &Ttl) -> String {
    let mut out = String::new();
    match t {
        Ttl::At(c) => clock(&mut out, c),
        Ttl::After(d) => {
            out.push('+');
            dur(&mut out, d);
        }
    }
    out
}

pub fn trigger_text(t: &Trigger) -> String {
    let mut s = String::new();
    trigger(&mut s, t);
    s
}

/// A price as canonical text.
pub fn price_text(p: &Price) -> String {
    let mut s = String::new();
    price(&mut s, p);
    s
}

/// A ticket as canonical text.
pub fn ticket_text(t: &Ticket) -> String {
    let mut s = String::new();
    ticket(&mut s, t);
    s
}

/// A series reference as canonical text.
pub fn series_text(s: &Series) -> String {
    let mut out = String::new();
    series(&mut out, s);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `print_to` writes the bytes of `print`: for every example document, and for one
    /// document of them all repeated until it spans many of `print_to`'s chunks.
    #[test]
    fn print_to_writes_what_print_returns() {
        let mut docs = crate::lang::example_documents();
        let all: String = docs.concat();
        docs.push(all.repeat(200 * 1024 / all.len().max(1) + 1));
        docs.push("# only a comment\n\n# and another\n".into());
        docs.push(String::new());
        let mut n = 0;
        for src in &docs {
            let Ok(doc) = crate::lang::parse(src) else {
                continue;
            };
            let mut w = Vec::new();
            print_to(&doc, &mut w).expect("writes");
            assert_eq!(String::from_utf8(w).expect("utf-8"), print(&doc));
            n += 1;
        }
        assert!(n >= 8, "the sample parses ({n} documents)");
    }
}
