//! The fail-closed rules of LANGUAGE.md §6 (and the project's additions), run after a
//! successful parse. Every refusal names its rule and tells the author what to write.

use super::ast::*;
use super::diag::{Diagnostic, LineIndex, Rule};
use std::collections::{BTreeSet, HashSet};

/// Where a document is being checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A `.kestrel` file: directives are refused.
    File,
    /// An author's turn: directives are allowed (the router decides what they mean).
    Turn,
}

/// Names in scope beyond the document itself (a turn's standing book, imported files).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    pub plans: BTreeSet<String>,
    pub views: BTreeSet<String>,
    pub wakes: BTreeSet<String>,
}

/// Run every rule; returns the refusals in source order (empty: the document is valid).
pub fn validate(src: &str, doc: &Document, mode: Mode, scope: &Scope) -> Vec<Diagnostic> {
    let mut c = Checker::new(src, mode, scope);
    for st in &doc.statements {
        c.statement(st);
    }
    c.finish()
}

/// [`validate`] a statement at a time, in document order: the refusals of the statements
/// given so far, with the references to names (ARM, plan(...), DELIVER) resolved at
/// [`Checker::finish`] against every name of the document, so a statement may name one
/// defined below it. The refusals are those of [`validate`] on the whole document.
pub(crate) struct Checker<'a> {
    v: Validator<'a>,
    mode: Mode,
    /// Names declared so far, per namespace (duplicates are refused at the second).
    seen: HashSet<(&'static str, String)>,
    names: Names,
    /// Does the text hold a number the range rule could refuse (`ranges::may_refuse`)?
    ranges: bool,
    range_out: Vec<super::ranges::Refusal>,
    /// Each plan's ARM targets, with where each is written (rule `arm-cycle`).
    arms: Vec<(String, Vec<(String, Span)>)>,
    /// Plans outside the document that may ARM one of its plans: the standing book's, and
    /// any when the document IMPORTs (the check does not see an imported plan's clauses).
    outside: BTreeSet<String>,
    imports: bool,
}

impl<'a> Checker<'a> {
    pub(crate) fn new(src: &'a str, mode: Mode, scope: &Scope) -> Checker<'a> {
        Checker {
            v: Validator {
                src,
                index: std::cell::OnceCell::new(),
                out: Vec::new(),
                refs: Vec::new(),
            },
            mode,
            seen: Default::default(),
            names: Names {
                plans: scope.plans.clone(),
                views: scope.views.clone(),
            },
            ranges: super::ranges::may_refuse(src),
            range_out: Vec::new(),
            arms: Vec::new(),
            outside: scope.plans.clone(),
            imports: false,
        }
    }

    /// Check one statement (the next one in the document).
    pub(crate) fn statement(&mut self, st: &Statement) {
        // Names: duplicates and what is in scope.
        if let Some(ns) = name_space(&st.kind)
            && let Some(name) = st.kind.name()
        {
            if !self.seen.insert((ns, name.text.clone())) {
                let what = name_word(ns);
                self.v.report(
                    Rule::DuplicateName,
                    span(st.span),
                    format!(
                        "duplicate {what} name `{}`: names are keys (lineage, ARM, plan(...) and the Blotter use them); rename one of them",
                        name.text
                    ),
                    "second use of this name",
                );
            }
            match &st.kind {
                StatementKind::Plan(_) | StatementKind::Import(_) => {
                    self.names.plans.insert(name.text.clone());
                }
                StatementKind::View(_) | StatementKind::ShowView(_) => {
                    self.names.views.insert(name.text.clone());
                }
                _ => {}
            }
        }
        match &st.kind {
            StatementKind::Plan(p) => {
                let targets = p
                    .clauses
                    .iter()
                    .filter_map(|c| match &c.kind {
                        ClauseKind::Arm(n) => Some((n.text.clone(), n.span)),
                        _ => None,
                    })
                    .collect();
                self.arms.push((p.name.text.clone(), targets));
            }
            StatementKind::Import(_) => self.imports = true,
            _ => {}
        }
        self.v.statement(st, self.mode);
        if self.ranges {
            super::ranges::statement(st, &mut self.range_out);
            for (at, msg, label) in self.range_out.drain(..) {
                self.v.report(Rule::NumberRange, at, msg, label);
            }
        }
    }

    /// Rule `arm-cycle`: an ARM target starts dormant and arms when a plan that ARMs it
    /// gets its first fill (docs/runtime.md). A plan that starts armed is one no plan of the
    /// document ARMs; every plan reached from those through ARMs can arm. A target reached
    /// from none of them is armed only by itself or by plans of an ARM cycle that nothing
    /// leads into: it would sit dormant all session, and the close would report it as a plan
    /// that did not trigger. Refused at each such plan's first `ARM` naming it, unless a plan
    /// outside the document may ARM it (the standing book's, or an IMPORT's).
    fn arm_cycles(&mut self) {
        if self.imports || self.arms.iter().all(|(_, t)| t.is_empty()) {
            return;
        }
        let targeted: HashSet<&str> = self
            .arms
            .iter()
            .flat_map(|(_, t)| t.iter().map(|(n, _)| n.as_str()))
            .collect();
        let mut armed: HashSet<&str> = self
            .arms
            .iter()
            .map(|(p, _)| p.as_str())
            .filter(|p| !targeted.contains(p) || self.outside.contains(*p))
            .collect();
        loop {
            let before = armed.len();
            for (p, t) in &self.arms {
                if armed.contains(p.as_str()) {
                    armed.extend(t.iter().map(|(n, _)| n.as_str()));
                }
            }
            if armed.len() == before {
                break;
            }
        }
        let mut out = Vec::new();
        let mut done: HashSet<&str> = HashSet::new();
        for (_, t) in &self.arms {
            for (target, at) in t {
                let is_plan = self.arms.iter().any(|(p, _)| p == target);
                if !is_plan || armed.contains(target.as_str()) || !done.insert(target) {
                    continue;
                }
                let by: Vec<&str> = self
                    .arms
                    .iter()
                    .filter(|(_, t)| t.iter().any(|(n, _)| n == target))
                    .map(|(p, _)| p.as_str())
                    .collect();
                let msg = if by == [target.as_str()] {
                    format!(
                        "plan `{target}` ARMs itself and no other plan ARMs it: an ARM target starts dormant until a plan that ARMs it fills, so `{target}` could never arm; remove `ARM {target}`, or ARM `{target}` from a plan that starts armed"
                    )
                } else {
                    let by = by
                        .iter()
                        .map(|p| format!("`{p}`"))
                        .collect::<Vec<_>>()
                        .join(", ");
                    format!(
                        "plan `{target}` could never arm: an ARM target starts dormant until a plan that ARMs it fills, and it is armed only by {by}, which could never arm either (an ARM cycle that no plan starting armed leads into); remove an ARM of the cycle, or ARM `{target}` from a plan that starts armed"
                    )
                };
                out.push((span(*at), msg));
            }
        }
        for (at, msg) in out {
            self.v.report(Rule::ArmCycle, at, msg, "never armed");
        }
    }

    /// Resolve the references to names, and give every refusal in source order.
    pub(crate) fn finish(mut self) -> Vec<Diagnostic> {
        self.arm_cycles();
        let mut v = self.v;
        let names = self.names;
        for r in std::mem::take(&mut v.refs) {
            let known = match r.kind {
                RefKind::PlanEvent | RefKind::Arm => names.plans.contains(&r.text),
                RefKind::Deliver => names.views.contains(&r.text),
            };
            if known {
                continue;
            }
            let (msg, label) = match r.kind {
                RefKind::PlanEvent => (
                    format!(
                        "plan({}) names a plan that is not in scope; {}",
                        r.text,
                        names.in_scope_plans()
                    ),
                    "unknown plan",
                ),
                RefKind::Arm => (
                    format!(
                        "ARM names the plan `{}`, which is not in scope; {}",
                        r.text,
                        names.in_scope_plans()
                    ),
                    "unknown plan",
                ),
                RefKind::Deliver => (
                    format!(
                        "DELIVER names the view `{}`, which is not in scope; {}{}",
                        r.text,
                        names.in_scope_views(),
                        // The desk and the Frame call the View a wake delivers without a
                        // DELIVER `default`; an author that names it is told how.
                        if r.text == "default" {
                            "; a WAKE without DELIVER delivers the default View: leave DELIVER out"
                        } else {
                            ""
                        }
                    ),
                    "unknown view",
                ),
            };
            v.report(Rule::UnknownRef, span(r.span), msg, label);
        }
        let mut out = v.out;
        out.sort_by_key(|d| (d.start, d.rule));
        out
    }
}

/// A name a statement refers to, resolved when every name is known.
struct NameRef {
    kind: RefKind,
    text: String,
    span: Span,
}

#[derive(Clone, Copy)]
enum RefKind {
    /// `plan(x) fired` / `plan(x) filled` in a trigger.
    PlanEvent,
    /// `ARM x`.
    Arm,
    /// `DELIVER x` (a view).
    Deliver,
}

struct Validator<'a> {
    src: &'a str,
    /// Line starts, built at the first refusal (a valid document never needs them).
    index: std::cell::OnceCell<LineIndex<'a>>,
    out: Vec<Diagnostic>,
    refs: Vec<NameRef>,
}

fn num_span(n: &Num) -> std::ops::Range<usize> {
    n.span.start as usize..n.span.end as usize
}
fn span(s: Span) -> std::ops::Range<usize> {
    s.start as usize..s.end as usize
}

impl<'a> Validator<'a> {
    fn index(&self) -> &LineIndex<'a> {
        self.index.get_or_init(|| LineIndex::new(self.src))
    }

    fn report(
        &mut self,
        rule: Rule,
        at: std::ops::Range<usize>,
        msg: impl Into<String>,
        label: &str,
    ) {
        let d = Diagnostic::new(self.src, self.index(), rule, at, msg, label);
        self.out.push(d);
    }

    fn statement(&mut self, st: &Statement, mode: Mode) {
        if mode == Mode::File && st.kind.is_directive() {
            self.report(
                Rule::DirectiveInFile,
                span(st.span),
                format!(
                    "{} is a turn directive and belongs in a turn, not in a .kestrel file: remove it from the file (write it as the whole reply at a wake)",
                    st.kind.keyword()
                ),
                "directive in a file",
            );
        }
        match &st.kind {
            StatementKind::Plan(p) => self.plan(st, p),
            StatementKind::Wake(w) => self.wake(w),
            StatementKind::View(v) | StatementKind::ShowView(v) => {
                if let Some(b) = &v.budget
                    && b.value() <= 0.0
                {
                    self.report(
                        Rule::BudgetNonpositive,
                        num_span(b),
                        format!("a view budget is a positive number of tokens, found `{}`: write e.g. `budget 900`", b.text),
                        "budget must be positive",
                    );
                } else if let Some(b) = &v.budget
                    && b.value() < crate::view::render::MIN_VIEW_BUDGET as f64
                {
                    self.report(
                        Rule::NumberRange,
                        num_span(b),
                        format!(
                            "a view budget of {} tokens cannot hold the Frame's header and the line saying what it dropped: a VIEW needs at least {} tokens; write e.g. `budget 900`",
                            b.text,
                            crate::view::render::MIN_VIEW_BUDGET
                        ),
                        "below the Frame's floor",
                    );
                }
                for p in &v.panes {
                    self.pane(&p.pane, p.span);
                }
            }
            StatementKind::Pod(p) if p.day_loss.value() <= 0.0 => {
                self.report(
                        Rule::BudgetNonpositive,
                        num_span(&p.day_loss),
                        format!("day-loss is a positive risk fraction, found `{}R`: write e.g. `day-loss 2R`", p.day_loss.text),
                        "must be positive",
                    );
            }
            StatementKind::Book(b) if b.budget.value() <= 0.0 => {
                self.report(
                    Rule::BudgetNonpositive,
                    num_span(&b.budget),
                    format!(
                        "budget is a positive risk fraction, found `{}R`: write e.g. `budget 1.5R`",
                        b.budget.text
                    ),
                    "must be positive",
                );
            }
            _ => {}
        }
    }

    fn pane(&mut self, p: &Pane, at: Span) {
        let n = match p {
            Pane::Chain {
                strikes: Some(n), ..
            }
            | Pane::Blotter { last: Some(n) }
            | Pane::Journal { last: Some(n) }
            | Pane::Headlines { last: Some(n) } => n,
            Pane::Tape { bar: Some(d) } | Pane::Velocity { window: d } => {
                self.dur(d);
                return;
            }
            _ => return,
        };
        if n.value() <= 0.0 || n.text.contains('.') {
            let _ = at;
            self.report(
                Rule::QtyNonpositive,
                num_span(n),
                format!("a count is a positive integer, found `{}`", n.text),
                "positive integer",
            );
        }
    }

    fn wake(&mut self, w: &Wake) {
        self.trigger(&w.when, false);
        if let Some(d) = &w.deliver {
            self.refs.push(NameRef {
                kind: RefKind::Deliver,
                text: d.text.clone(),
                span: d.span,
            });
        }
        if let Some(b) = &w.budget
            && (b.value() <= 0.0 || b.text.contains('.'))
        {
            self.report(
                Rule::BudgetNonpositive,
                num_span(b),
                format!(
                    "a wake budget is a positive whole number of wakes per day, found `{}`",
                    b.text
                ),
                "must be positive",
            );
        }
    }

    fn plan(&mut self, st: &Statement, p: &Plan) {
        if p.budget.value() <= 0.0 {
            self.report(
                Rule::BudgetNonpositive,
                num_span(&p.budget),
                format!(
                    "budget is a positive risk fraction, found `{}R`: a plan must risk something bounded, like `budget 0.25R`",
                    p.budget.text
                ),
                "budget must be positive",
            );
        }
        if let Ttl::After(d) = &p.ttl {
            self.dur(d);
        }
        let whens = p
            .clauses
            .iter()
            .filter(|c| matches!(c.kind, ClauseKind::When(_)))
            .count();
        let dos = p
            .clauses
            .iter()
            .filter(|c| matches!(c.kind, ClauseKind::Do(_)))
            .count();
        let usings: Vec<&Clause> = p
            .clauses
            .iter()
            .filter(|c| matches!(c.kind, ClauseKind::Using(_)))
            .collect();
        let head = span(Span::new(
            st.span.start as usize,
            st.span.start as usize + 4,
        ));
        if whens == 0 {
            self.report(
                Rule::ClauseCount,
                head.clone(),
                format!("PLAN `{}` has no WHEN: add exactly one `  WHEN <trigger>` line saying when to enter", p.name.text),
                "missing WHEN",
            );
        } else if whens > 1 {
            self.report(
                Rule::ClauseCount,
                head.clone(),
                format!("PLAN `{}` has {whens} WHEN clauses: a plan has exactly one; join the conditions with AND / OR, or add to a position with RELOAD WHEN", p.name.text),
                "more than one WHEN",
            );
        }
        if dos == 0 {
            self.report(
                Rule::ClauseCount,
                head.clone(),
                format!("PLAN `{}` has no DO: add at least one `  DO buy <qty> <strike> C|P @ <price>` line", p.name.text),
                "missing DO",
            );
        }
        if usings.len() > 1 {
            self.report(
                Rule::ClauseCount,
                span(usings[1].span),
                "a PLAN has at most one USING: keep one".to_string(),
                "second USING",
            );
        }

        // Each opening ticket with whether it is a RELOAD's (which fires on its own trigger).
        let mut opening: Vec<(&Ticket, bool)> = Vec::new();
        for c in &p.clauses {
            match &c.kind {
                ClauseKind::When(t) | ClauseKind::CancelIf(t) => self.trigger(t, false),
                ClauseKind::Do(t) | ClauseKind::Also(t) => {
                    self.ticket(t);
                    opening.push((t, false));
                }
                ClauseKind::Reload { when, ticket } => {
                    self.trigger(when, false);
                    self.ticket(ticket);
                    opening.push((ticket, true));
                }
                ClauseKind::Tp {
                    mult,
                    frac,
                    price,
                    modifiers,
                } => {
                    if mult.value() <= 1.0 {
                        self.report(
                            Rule::TpMultiple,
                            num_span(mult),
                            format!("TP {}x would sell at or below cost: a take-profit multiple is above 1 (like `TP 2x`); to cut a loss, use EXIT on the underlying", mult.text),
                            "above 1x",
                        );
                    }
                    if let Some(f) = frac {
                        let v = f.value();
                        if !(v > 0.0 && v <= 1.0) {
                            self.report(
                                Rule::FracRange,
                                num_span(f),
                                format!("frac is the fraction of the position to sell, in (0, 1], found `{}`: write e.g. `frac 0.5` for half, or leave it out for all", f.text),
                                "frac in (0, 1]",
                            );
                        }
                    }
                    self.price(price, true);
                    self.modifiers(modifiers);
                }
                ClauseKind::Exit {
                    when,
                    price,
                    modifiers,
                } => {
                    self.trigger(when, true);
                    self.exit_on_mark(when, "EXIT");
                    if let Some(p) = price {
                        self.price(p, true);
                    }
                    self.modifiers(modifiers);
                }
                ClauseKind::Invalidate { when, .. } => {
                    self.trigger(when, true);
                    self.exit_on_mark(when, "INVALIDATE");
                }
                ClauseKind::Arm(n) => self.refs.push(NameRef {
                    kind: RefKind::Arm,
                    text: n.text.clone(),
                    span: n.span,
                }),
                ClauseKind::Using(_) => {}
            }
        }
        self.naked_sell(&opening);
    }

    fn ticket(&mut self, t: &Ticket) {
        let q = t.qty.value();
        if q <= 0.0 || t.qty.text.contains('.') {
            self.report(
                Rule::QtyNonpositive,
                num_span(&t.qty),
                format!("quantity is a positive integer (contracts or shares), found `{}`: write e.g. `buy 1 +1 C @ fair`", t.qty.text),
                "positive integer",
            );
        }
        if let Instrument::Option {
            strike: Strike::Relative(n),
            right,
        } = &t.instrument
        {
            self.strike_steps(n, *right);
        }
        self.price(&t.price, true);
        self.modifiers(&t.modifiers);
    }

    /// A relative strike counts whole strike steps from ATM (`+2 C`: two strikes above the
    /// money): a fractional step names no contract, and the runtime would round it to one
    /// the author did not write. Refused like a fractional quantity. An offset the range
    /// walk refuses (past its bound, too many digits; `ranges.rs`) is not refused twice.
    fn strike_steps(&mut self, n: &Num, right: Right) {
        // A whole offset (nearly every one) is asked nothing more.
        if !n.text.contains('.') {
            return;
        }
        let digits = super::ranges::significant(&n.text);
        let bound = super::ranges::BOUNDS
            .iter()
            .find(|b| b.0 == "relative")
            .map_or(f64::MAX, |b| b.1);
        if digits > super::ranges::MAX_DIGITS || n.value().abs() > bound {
            return;
        }
        let r = match right {
            Right::C => "C",
            Right::P => "P",
        };
        let sign = &n.text[..1];
        let whole: u64 = n.text[1..]
            .split('.')
            .next()
            .and_then(|w| w.parse().ok())
            .unwrap_or(0);
        let near = if whole == 0 {
            format!("`ATM {r}`")
        } else {
            format!("`{sign}{whole} {r}`")
        };
        self.report(
            Rule::NumberRange,
            num_span(n),
            format!(
                "a strike offset counts whole strikes from ATM (`+1 {r}` is the next strike up), found `{}`: write {near} or `{sign}{} {r}`, or an absolute strike like `5200.5 {r}`",
                n.text,
                whole + 1
            ),
            "whole strike steps",
        );
    }

    fn modifiers(&mut self, m: &[Modifier]) {
        for m in m {
            match m {
                Modifier::Esc { price, after } => {
                    self.price(price, false);
                    self.dur(after);
                }
                Modifier::Cap { price } | Modifier::Floor { price } => self.price(price, false),
                Modifier::CancelIf { when } => self.trigger(when, false),
                Modifier::Peg | Modifier::Fix => {}
            }
        }
    }

    /// Structural checks on every price; `anchor_rule` applies `price-mark` (the main
    /// price of a ticket, TP or EXIT; esc / cap / floor targets are exempt).
    fn price(&mut self, p: &Price, anchor_rule: bool) {
        self.lean_weights(p);
        if anchor_rule && let Some(m) = unguarded_mark(p) {
            self.report(
                Rule::PriceMark,
                span(m.span),
                format!(
                    "`{}` is a mark, and marks lie: anchor the price on fair, intrinsic or basis (e.g. `@ fair-2c`), or guard the mark with min/max against one (e.g. `@ min(fair, {})`)",
                    m.text, m.text
                ),
                "a mark as the anchor",
            );
        }
    }

    fn lean_weights(&mut self, p: &Price) {
        match p {
            Price::Lean { a, b, w, .. } => {
                let v = w.value();
                if !(0.0..=1.0).contains(&v) {
                    self.report(
                        Rule::LeanWeight,
                        num_span(w),
                        format!("lean(a, b, w) is a + w*(b - a), so the weight is in [0, 1], found `{}`: write e.g. `lean(bid, fair, 0.4)`", w.text),
                        "weight in [0, 1]",
                    );
                }
                self.lean_weights(a);
                self.lean_weights(b);
            }
            Price::Min { a, b, .. } | Price::Max { a, b, .. } => {
                self.lean_weights(a);
                self.lean_weights(b);
            }
            _ => {}
        }
    }

    fn trigger(&mut self, t: &Trigger, _exit: bool) {
        let mut found: Vec<Diagnostic> = Vec::new();
        let mut refs: Vec<NameRef> = Vec::new();
        t.for_each_pred(&mut |p| {
            let mut push = |rule, at: Span, msg: String, label: &str| {
                found.push(Diagnostic::new(
                    self.src,
                    self.index(),
                    rule,
                    span(at),
                    msg,
                    label,
                ));
            };
            match p {
                Predicate::Cross {
                    series,
                    dir,
                    value,
                    held: Some(h),
                    ..
                } => {
                    let dir = match dir {
                        CrossDir::Above => ">",
                        CrossDir::Below => "<",
                    };
                    let mut v = String::new();
                    value_text(&mut v, value);
                    push(
                        Rule::HeldCross,
                        Span::new(series.span.start as usize, h.span.end as usize),
                        format!(
                            "a cross is an instant and cannot be held: write `{} {dir} {v} held {}{}` for a level that holds",
                            crate::lang::print::series_text(series),
                            h.text,
                            unit(h)
                        ),
                        "a cross cannot be held",
                    );
                }
                Predicate::Event { event, within, .. } => {
                    if let Event::PlanFired { plan } | Event::PlanFilled { plan } = event {
                        refs.push(NameRef {
                            kind: RefKind::PlanEvent,
                            text: plan.text.clone(),
                            span: plan.span,
                        });
                    }
                    if let Some(w) = within
                        && w.amount == 0
                    {
                        push(Rule::DurationZero, w.span, "a duration is positive: `within 0s` can never hold; write e.g. `within 10m`".into(), "positive duration");
                    }
                }
                _ => {}
            }
            if let Predicate::Cross { series, value, .. } | Predicate::Compare { series, value, .. } = p {
                if let Value::Percentile { pct } = value {
                    let v = pct.value();
                    if !(0.0..=100.0).contains(&v) {
                        push(
                            Rule::PercentileRange,
                            pct.span,
                            format!("p{} is not a percentile: pN has N in [0, 100], like p95 or p99.9", pct.text),
                            "N in [0, 100]",
                        );
                    }
                }
                let mut ds: Vec<&Dur> = Vec::new();
                if let SeriesKind::Velocity { window } = &series.kind {
                    ds.push(window);
                }
                if let Value::Series { series: s2 } = value
                    && let SeriesKind::Velocity { window } = &s2.kind
                {
                    ds.push(window);
                }
                if let Predicate::Compare { held: Some(h), .. } = p {
                    ds.push(h);
                }
                for d in ds {
                    if d.amount == 0 {
                        push(Rule::DurationZero, d.span, format!("a duration is positive, found `{}{}`: write e.g. `60s`", d.text, unit(d)), "positive duration");
                    }
                }
            }
        });
        self.out.extend(found);
        self.refs.extend(refs);
    }

    fn dur(&mut self, d: &Dur) {
        if d.amount == 0 {
            self.report(
                Rule::DurationZero,
                span(d.span),
                format!(
                    "a duration is positive, found `{}{}`: write e.g. `30s` or `2m`",
                    d.text,
                    unit(d)
                ),
                "positive duration",
            );
        }
    }

    fn exit_on_mark(&mut self, t: &Trigger, clause: &str) {
        let mut hits: Vec<(Span, String)> = Vec::new();
        t.for_each_pred(&mut |p| {
            if let Predicate::Cross { series, value, .. }
            | Predicate::Compare { series, value, .. } = p
            {
                if series.kind.is_leg_quote() {
                    hits.push((series.span, series.text.clone()));
                }
                if let Value::Series { series: s } = value
                    && s.kind.is_leg_quote()
                {
                    hits.push((s.span, s.text.clone()));
                }
            }
        });
        for (at, text) in hits {
            self.report(
                Rule::ExitOnMark,
                span(at),
                format!(
                    "{clause} may not condition on the mark `{text}`: marks lie; condition on the underlying (spot, vwap, hod, lod, ...), e.g. `{clause} spot < vwap held 60s`"
                ),
                "exits condition on the underlying",
            );
        }
    }

    /// Rule `naked-sell`: every opening sell is covered by long legs that are in force when
    /// it can fill. Only the entry's buys (DO and ALSO) cover: they fire with a DO or ALSO
    /// sell, and before any RELOAD. A RELOAD's buy does not: it fires on its own trigger,
    /// maybe never (`DO sell 1 +2 C` with `RELOAD WHEN spot > 100000 buy 1 +1 C` held a naked
    /// call to 0.67R on a 0.1R plan). The engine then holds a covered sell until its cover
    /// has filled (docs/runtime.md, "A covered sell waits for its cover").
    fn naked_sell(&mut self, opening: &[(&Ticket, bool)]) {
        let tickets: Vec<&Ticket> = opening.iter().map(|(t, _)| *t).collect();
        let entry_buys: Vec<&Ticket> = opening
            .iter()
            .filter(|(o, reload)| !reload && o.side == Side::Buy)
            .map(|(o, _)| *o)
            .collect();
        let reload_buys = opening
            .iter()
            .any(|(o, reload)| *reload && o.side == Side::Buy);
        for t in &tickets {
            if t.side != Side::Sell {
                continue;
            }
            if let Err(mut why) = covered(t, &entry_buys, &tickets) {
                if reload_buys && covered(t, &buys_of(&tickets), &tickets).is_ok() {
                    why.push_str(" (a RELOAD's buy does not cover it: it fires on its own trigger, maybe never; cover it with a DO or ALSO buy)");
                }
                self.report(
                    Rule::NakedSell,
                    span(t.span),
                    format!("never naked: this opening sell has {why}; sell only what you hold or as a covered leg (e.g. DO buy 2 ATM C ... then ALSO sell 2 +3 C ...)"),
                    "uncovered sell",
                );
            }
        }
    }
}

fn unit(d: &Dur) -> char {
    match d.unit {
        DurUnit::S => 's',
        DurUnit::M => 'm',
        DurUnit::H => 'h',
    }
}

fn value_text(out: &mut String, v: &Value) {
    match v {
        Value::Number { value } => out.push_str(&value.text),
        Value::Clock { clock } => out.push_str(&format!("{:02}:{:02}", clock.hour, clock.minute)),
        Value::Series { series } => out.push_str(&crate::lang::print::series_text(series)),
        Value::Percentile { pct } => {
            out.push('p');
            out.push_str(&pct.text)
        }
    }
}

struct Names {
    plans: BTreeSet<String>,
    views: BTreeSet<String>,
}

impl Names {
    fn in_scope_plans(&self) -> String {
        list("plans", &self.plans)
    }
    fn in_scope_views(&self) -> String {
        list("views", &self.views)
    }
}

fn list(what: &str, s: &BTreeSet<String>) -> String {
    if s.is_empty() {
        format!(
            "no {what} are in scope (define one in this document, IMPORT it, or use one from the standing book)"
        )
    } else {
        let v: Vec<&str> = s.iter().map(String::as_str).collect();
        format!("{what} in scope: {}", v.join(", "))
    }
}

/// The first mark anchor (mid, last) in `p` that is not guarded by a min/max whose other
/// operand contains a value anchor (fair, intrinsic, basis).
pub fn unguarded_mark(p: &Price) -> Option<&Anchor> {
    match p {
        Price::Anchor { anchor, .. } if anchor.kind.is_mark() => Some(anchor),
        Price::Anchor { .. } | Price::Number { .. } | Price::Stub { .. } => None,
        Price::Lean { a, b, .. } => unguarded_mark(a).or_else(|| unguarded_mark(b)),
        Price::Min { a, b, .. } | Price::Max { a, b, .. } => {
            let a_mark = if has_value_anchor(b) {
                None
            } else {
                unguarded_mark(a)
            };
            a_mark.or_else(|| {
                if has_value_anchor(a) {
                    None
                } else {
                    unguarded_mark(b)
                }
            })
        }
    }
}

fn has_value_anchor(p: &Price) -> bool {
    match p {
        Price::Anchor { anchor, .. } => anchor.kind.is_value(),
        Price::Number { .. } | Price::Stub { .. } => false,
        Price::Lean { a, b, .. } | Price::Min { a, b, .. } | Price::Max { a, b, .. } => {
            has_value_anchor(a) || has_value_anchor(b)
        }
    }
}

/// A strike as a comparable position: relative steps from ATM, or an absolute level.
#[derive(Clone, Copy, PartialEq)]
enum StrikePos {
    Rel(f64),
    Abs(f64),
}

fn strike_pos(s: &Strike) -> StrikePos {
    match s {
        Strike::Atm => StrikePos::Rel(0.0),
        Strike::Relative(n) => StrikePos::Rel(n.value()),
        Strike::Absolute(n) => StrikePos::Abs(n.value()),
    }
}

/// Is an opening sell covered by the plan's long legs? Coverage, leg by leg:
/// - `sell n shares`: at least n long shares;
/// - `sell n K C`: long calls at a strike at or below K (a call spread), or 100 long shares
///   per contract (a covered call);
/// - `sell n K P`: long puts at a strike at or above K (a put spread).
///
/// Strikes compare only when written the same way (both relative to ATM, or both absolute).
/// Long legs are shared across the plan's sells: the total short quantity of each right
/// must not exceed the covering long quantity.
/// Every buy among `tickets`.
fn buys_of<'t>(tickets: &[&'t Ticket]) -> Vec<&'t Ticket> {
    tickets
        .iter()
        .filter(|o| o.side == Side::Buy)
        .copied()
        .collect()
}

fn covered(t: &Ticket, buys: &[&Ticket], all: &[&Ticket]) -> Result<(), String> {
    let qty = |x: &Ticket| x.qty.value().max(0.0);
    // An empty sum of floats is -0.0 (and read `against -0 long`); the quantities are not
    // negative, so its size is the sum.
    let long_shares: f64 = buys
        .iter()
        .filter(|b| b.instrument == Instrument::Shares)
        .map(|b| qty(b))
        .sum::<f64>()
        .abs();
    match &t.instrument {
        Instrument::Shares => {
            let short: f64 = all
                .iter()
                .filter(|x| x.side == Side::Sell && x.instrument == Instrument::Shares)
                .map(|x| qty(x))
                .sum();
            if long_shares >= short {
                Ok(())
            } else {
                Err(format!("{short} shares short against {long_shares} long"))
            }
        }
        Instrument::Option { strike, right } => {
            let k = strike_pos(strike);
            let mut incomparable = false;
            let covers = |b: &&&Ticket| -> bool {
                let Instrument::Option {
                    strike: bs,
                    right: br,
                } = &b.instrument
                else {
                    return false;
                };
                if br != right {
                    return false;
                }
                match (strike_pos(bs), k) {
                    (StrikePos::Rel(x), StrikePos::Rel(y))
                    | (StrikePos::Abs(x), StrikePos::Abs(y)) => {
                        if *right == Right::C {
                            x <= y
                        } else {
                            x >= y
                        }
                    }
                    _ => false,
                }
            };
            let long_cover: f64 = buys.iter().filter(covers).map(|b| qty(b)).sum();
            let same_right_longs = buys.iter().any(
                |b| matches!(&b.instrument, Instrument::Option { right: br, .. } if br == right),
            );
            let short: f64 = all
                .iter()
                .filter(|x| {
                    x.side == Side::Sell
                        && matches!(&x.instrument, Instrument::Option { right: r, .. } if r == right)
                })
                .map(|x| qty(x))
                .sum();
            let share_cover = if *right == Right::C {
                (long_shares / 100.0).floor()
            } else {
                0.0
            };
            if long_cover + share_cover >= short {
                return Ok(());
            }
            if same_right_longs && long_cover == 0.0 {
                incomparable = buys.iter().any(|b| match &b.instrument {
                    Instrument::Option {
                        strike: bs,
                        right: br,
                    } if br == right => {
                        matches!(
                            (strike_pos(bs), k),
                            (StrikePos::Rel(_), StrikePos::Abs(_))
                                | (StrikePos::Abs(_), StrikePos::Rel(_))
                        )
                    }
                    _ => false,
                });
            }
            if incomparable {
                Err("strikes written in two ways (relative and absolute), so its cover cannot be checked: write both legs' strikes the same way".into())
            } else if long_cover > 0.0 {
                Err(format!(
                    "{short} contracts short against {long_cover} covering long"
                ))
            } else {
                Err(format!(
                    "no long {} leg at a covering strike",
                    if *right == Right::C { "call" } else { "put" }
                ))
            }
        }
    }
}

/// The names a statement declares live in one space per kind (`rule=duplicate-name`): a
/// PLAN and an IMPORT share one (both name a plan); a VIEW, a SHOW VIEW, a WAKE, a POD and
/// a BOOK each have their own. `None`: the statement declares no name.
pub(crate) fn name_space(kind: &StatementKind) -> Option<&'static str> {
    match kind {
        StatementKind::Plan(_) | StatementKind::Import(_) => Some("PLAN"),
        StatementKind::View(_) => Some("VIEW"),
        StatementKind::ShowView(_) => Some("SHOW VIEW"),
        StatementKind::Wake(_) => Some("WAKE"),
        StatementKind::Pod(_) => Some("POD"),
        StatementKind::Book(_) => Some("BOOK"),
        _ => None,
    }
}

/// A name space as a message words it: `duplicate plan name`, `duplicate VIEW name`.
pub(crate) fn name_word(ns: &str) -> &str {
    if ns == "PLAN" { "plan" } else { ns }
}
