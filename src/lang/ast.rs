//! The typed model of a Kestrel document.
//!
//! The model is the language; text is its projection (`print`). Every node that came from
//! source carries a [`Span`]. Lexemes that the language says "print as written" (numbers,
//! durations, series and anchor spellings) are kept as their source text, so printing never
//! reformats a number. Comments and blank lines are [`Trivia`] attached to the statement,
//! clause or pane line that follows them; a trailing comment belongs to its line.

use serde::Serialize;

/// Where a node came from: a byte range in the document. Line and column are derived with
/// [`crate::lang::LineIndex`]. Spans are ignored by [`crate::lang::model_eq`]; a model built
/// by hand uses [`Span::default`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }
}

/// An own-line comment or a blank line. Runs of blank lines collapse to one at parse time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "text", rename_all = "kebab-case")]
pub enum Trivia {
    Blank,
    /// The whole line verbatim (leading whitespace, `#`, text, trailing whitespace), without
    /// its line ending.
    Comment(String),
}

/// A comment after code on the same line, with the exact whitespace before its `#`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrailingComment {
    /// The run of spaces / tabs between the code and `#`, kept verbatim (may be empty).
    pub gap: String,
    /// From `#` to the end of the line, verbatim.
    pub text: String,
}

/// A parsed document (a module): statements in author order, plus trivia after the last one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Document {
    pub statements: Vec<Statement>,
    /// Comments after the last statement (trailing blank lines are dropped).
    pub tail: Vec<Trivia>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Statement {
    pub leading: Vec<Trivia>,
    pub kind: StatementKind,
    /// Trailing comment on the statement's head line.
    pub trailing: Option<TrailingComment>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "statement", rename_all = "kebab-case")]
pub enum StatementKind {
    Import(Import),
    Using(Using),
    View(View),
    Wake(Wake),
    Plan(Plan),
    Pod(Pod),
    Book(Book),
    Grade(Grade),
    /// Turn directive: `STAND-DOWN <reason>`.
    StandDown(StandDown),
    /// Turn directive: `SHOW VIEW <name> [budget n]` with panes.
    ShowView(View),
    /// Turn directive: `CANCEL <ref>`.
    Cancel(Cancel),
}

impl StatementKind {
    /// The head keyword as printed (`PLAN`, `SHOW VIEW`, ...).
    pub fn keyword(&self) -> &'static str {
        match self {
            StatementKind::Import(_) => "IMPORT",
            StatementKind::Using(_) => "USING",
            StatementKind::View(_) => "VIEW",
            StatementKind::Wake(_) => "WAKE",
            StatementKind::Plan(_) => "PLAN",
            StatementKind::Pod(_) => "POD",
            StatementKind::Book(_) => "BOOK",
            StatementKind::Grade(_) => "GRADE",
            StatementKind::StandDown(_) => "STAND-DOWN",
            StatementKind::ShowView(_) => "SHOW VIEW",
            StatementKind::Cancel(_) => "CANCEL",
        }
    }

    /// Is this a turn directive (STAND-DOWN, SHOW VIEW, CANCEL)?
    pub fn is_directive(&self) -> bool {
        matches!(
            self,
            StatementKind::StandDown(_) | StatementKind::ShowView(_) | StatementKind::Cancel(_)
        )
    }

    /// The statement's own name, if it declares one.
    pub fn name(&self) -> Option<&Name> {
        match self {
            StatementKind::Import(i) => Some(&i.name),
            StatementKind::View(v) | StatementKind::ShowView(v) => Some(&v.name),
            StatementKind::Wake(w) => Some(&w.name),
            StatementKind::Plan(p) => Some(&p.name),
            StatementKind::Pod(p) => Some(&p.name),
            StatementKind::Book(b) => Some(&b.name),
            _ => None,
        }
    }
}

/// A kebab-case name: `[a-z][a-z0-9-]*`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Name {
    pub text: String,
    pub span: Span,
}

/// A number as written (`12`, `0.25`, `-3`, `0.40`). The lexeme is the value's identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Num {
    pub text: String,
    pub span: Span,
}

impl Num {
    /// The numeric value. Lexemes are validated by the parser, so this never fails for a
    /// parsed number; a hand-built bad lexeme reads as NaN.
    pub fn value(&self) -> f64 {
        decimal_value(&self.text).unwrap_or_else(|| self.text.parse().unwrap_or(f64::NAN))
    }
}

/// The value of a short decimal lexeme, `-?[0-9]+(\.[0-9]+)?` with at most 15 digits in
/// all, computed without the general float parser: the digits as an integer (below 2^53,
/// so exact) divided by an exact power of ten, one correctly rounded division, which is the
/// value `str::parse::<f64>` gives (its own fast path). Anything else: `None`.
pub(crate) fn decimal_value(text: &str) -> Option<f64> {
    const POW10: [f64; 16] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    ];
    let b = text.as_bytes();
    let (neg, b) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        _ => (false, b),
    };
    if b.is_empty() || b.len() > 16 {
        return None;
    }
    let (mut m, mut digits, mut frac, mut point) = (0u64, 0usize, 0usize, false);
    for (n, &c) in b.iter().enumerate() {
        match c {
            b'0'..=b'9' => {
                m = m * 10 + u64::from(c - b'0');
                digits += 1;
                frac += usize::from(point);
            }
            b'.' if !point && n > 0 && n + 1 < b.len() => point = true,
            _ => return None,
        }
    }
    if digits > 15 {
        return None;
    }
    let x = m as f64 / POW10[frac];
    Some(if neg { -x } else { x })
}

/// A symbol: `[A-Z][A-Z0-9]*(\.[A-Z0-9]+)*`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sym {
    pub text: String,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DurUnit {
    S,
    M,
    H,
}

/// A duration `<n>s|m|h`, kept as written (`120s` stays `120s`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dur {
    pub amount: u64,
    pub unit: DurUnit,
    /// The digits as written (leading zeros survive).
    pub text: String,
    pub span: Span,
}

impl Dur {
    pub fn seconds(&self) -> u64 {
        self.amount.saturating_mul(match self.unit {
            DurUnit::S => 1,
            DurUnit::M => 60,
            DurUnit::H => 3600,
        })
    }
}

/// A clock time `HH:MM` in the exchange time zone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Clock {
    pub hour: u8,
    pub minute: u8,
    pub span: Span,
}

impl Clock {
    pub fn minutes(&self) -> u32 {
        u32::from(self.hour) * 60 + u32::from(self.minute)
    }
}

/// An option expiry: `0dte`, `1dte` or a date `YYYY-MM-DD`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "kebab-case")]
pub enum Expiry {
    Dte(u32),
    Date(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Import {
    pub name: Name,
    pub path: String,
}

/// `USING signal <SYM> exec <SYM> [<expiry>]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Using {
    pub signal: Sym,
    pub exec: Sym,
    pub expiry: Option<Expiry>,
}

/// A VIEW (standing screen) or SHOW VIEW (request for this turn).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct View {
    pub name: Name,
    pub budget: Option<Num>,
    pub panes: Vec<PaneLine>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PaneLine {
    pub leading: Vec<Trivia>,
    pub pane: Pane,
    pub trailing: Option<TrailingComment>,
    pub span: Span,
}

/// The pane catalog (LANGUAGE.md §3.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "pane", rename_all = "kebab-case")]
pub enum Pane {
    Tape {
        bar: Option<Dur>,
    },
    Levels,
    Chain {
        expiry: Expiry,
        strikes: Option<Num>,
    },
    Gex {
        expiry: Expiry,
    },
    /// `skew 25d`: the delta of the risk reversal.
    Skew {
        delta: Num,
    },
    Velocity {
        window: Dur,
    },
    Kernel,
    Plans,
    Blotter {
        last: Option<Num>,
    },
    Journal {
        last: Option<Num>,
    },
    Headlines {
        last: Option<Num>,
    },
}

/// The pane names, in catalog order (used by messages, the card and the grammars).
pub const PANE_CATALOG: &[&str] = &[
    "tape",
    "levels",
    "chain",
    "gex",
    "skew",
    "velocity",
    "kernel",
    "plans",
    "blotter",
    "journal",
    "headlines",
];

/// `WAKE <name> WHEN <trigger> [DELIVER <view>] [PRIORITY <n>] [BUDGET <n> wakes/day]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Wake {
    pub name: Name,
    pub when: Trigger,
    pub deliver: Option<Name>,
    pub priority: Option<Num>,
    pub budget: Option<Num>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Ttl {
    /// `ttl 14:45`
    At(Clock),
    /// `ttl +30m`
    After(Dur),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegimeEntry {
    pub key: String,
    pub value: String,
}

/// `PLAN <name> budget <n>R ttl <..> [regime {..}] [priority <n>]` and its clauses.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    pub name: Name,
    pub budget: Num,
    pub ttl: Ttl,
    pub regime: Option<Vec<RegimeEntry>>,
    pub priority: Option<Num>,
    pub clauses: Vec<Clause>,
}

impl Plan {
    pub fn when(&self) -> Option<&Trigger> {
        self.clauses.iter().find_map(|c| match &c.kind {
            ClauseKind::When(t) => Some(t),
            _ => None,
        })
    }
    pub fn using(&self) -> Option<&Using> {
        self.clauses.iter().find_map(|c| match &c.kind {
            ClauseKind::Using(u) => Some(u),
            _ => None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Clause {
    pub leading: Vec<Trivia>,
    pub kind: ClauseKind,
    pub trailing: Option<TrailingComment>,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InvalidateAction {
    Halt,
    HaltRide,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "clause", rename_all = "kebab-case")]
pub enum ClauseKind {
    Using(Using),
    When(Trigger),
    Do(Ticket),
    Also(Ticket),
    Reload {
        when: Trigger,
        ticket: Ticket,
    },
    Tp {
        mult: Num,
        frac: Option<Num>,
        price: Price,
        modifiers: Vec<Modifier>,
    },
    Exit {
        when: Trigger,
        price: Option<Price>,
        modifiers: Vec<Modifier>,
    },
    Invalidate {
        when: Trigger,
        action: Option<InvalidateAction>,
    },
    CancelIf(Trigger),
    Arm(Name),
}

impl ClauseKind {
    pub fn keyword(&self) -> &'static str {
        match self {
            ClauseKind::Using(_) => "USING",
            ClauseKind::When(_) => "WHEN",
            ClauseKind::Do(_) => "DO",
            ClauseKind::Also(_) => "ALSO",
            ClauseKind::Reload { .. } => "RELOAD",
            ClauseKind::Tp { .. } => "TP",
            ClauseKind::Exit { .. } => "EXIT",
            ClauseKind::Invalidate { .. } => "INVALIDATE",
            ClauseKind::CancelIf(_) => "CANCEL-IF",
            ClauseKind::Arm(_) => "ARM",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Buy,
    Sell,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Right {
    C,
    P,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "kebab-case")]
pub enum Strike {
    Atm,
    /// `+2` / `-1`: strikes from at-the-money (the lexeme keeps its sign).
    Relative(Num),
    Absolute(Num),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Instrument {
    Option { strike: Strike, right: Right },
    Shares,
}

/// `(buy | sell) <qty> <instrument> @ <price> [<modifier> ...]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ticket {
    pub side: Side,
    pub qty: Num,
    pub instrument: Instrument,
    pub price: Price,
    pub modifiers: Vec<Modifier>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "modifier", rename_all = "kebab-case")]
pub enum Modifier {
    Peg,
    Fix,
    Esc { price: Price, after: Dur },
    Cap { price: Price },
    Floor { price: Price },
    CancelIf { when: Trigger },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnchorKind {
    Fair,
    Intrinsic,
    Basis,
    Bid,
    Ask,
    Mid,
    Last,
    Join,
    Improve,
}

impl AnchorKind {
    pub const ALL: &'static [(&'static str, AnchorKind)] = &[
        ("fair", AnchorKind::Fair),
        ("intrinsic", AnchorKind::Intrinsic),
        ("basis", AnchorKind::Basis),
        ("bid", AnchorKind::Bid),
        ("ask", AnchorKind::Ask),
        ("mid", AnchorKind::Mid),
        ("last", AnchorKind::Last),
        ("join", AnchorKind::Join),
        ("improve", AnchorKind::Improve),
    ];

    pub fn canonical(self) -> &'static str {
        AnchorKind::ALL
            .iter()
            .find(|(_, k)| *k == self)
            .map(|(s, _)| *s)
            .unwrap_or("fair")
    }

    /// Value anchors are what a thing is worth; the rest are queue positions.
    pub fn is_value(self) -> bool {
        matches!(
            self,
            AnchorKind::Fair | AnchorKind::Intrinsic | AnchorKind::Basis
        )
    }

    /// A mark: a quote that is not a value (`price-mark`).
    pub fn is_mark(self) -> bool {
        matches!(self, AnchorKind::Mid | AnchorKind::Last)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Anchor {
    pub kind: AnchorKind,
    /// As written (`fair`, `FAIR`).
    pub text: String,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OffsetUnit {
    /// Bare: price units.
    Price,
    /// `c`: cents.
    Cents,
    /// `%`: percent of the anchor.
    Percent,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Offset {
    /// `+` or `-`.
    pub negative: bool,
    /// Unsigned amount as written.
    pub amount: Num,
    pub unit: OffsetUnit,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "price", rename_all = "kebab-case")]
pub enum Price {
    Anchor {
        anchor: Anchor,
        offset: Option<Offset>,
    },
    Number {
        value: Num,
    },
    /// The minimum tick (as written, e.g. `stub`).
    Stub {
        text: String,
        span: Span,
    },
    Lean {
        a: Box<Price>,
        b: Box<Price>,
        w: Num,
        span: Span,
    },
    Min {
        a: Box<Price>,
        b: Box<Price>,
        span: Span,
    },
    Max {
        a: Box<Price>,
        b: Box<Price>,
        span: Span,
    },
}

// ---------------------------------------------------------------- triggers

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum Trigger {
    Or {
        terms: Vec<Trigger>,
    },
    And {
        terms: Vec<Trigger>,
    },
    Not {
        inner: Box<Trigger>,
    },
    /// A parenthesised trigger, kept so that printing keeps the author's parentheses.
    Group {
        inner: Box<Trigger>,
    },
    /// A predicate (boxed: the common one-predicate trigger is then a small value, cheap to
    /// pass up through the parser; serialized as the predicate itself).
    Pred {
        pred: Box<Predicate>,
    },
}

impl Trigger {
    /// Visit every predicate in the trigger, in source order.
    pub fn for_each_pred<'a>(&'a self, f: &mut dyn FnMut(&'a Predicate)) {
        match self {
            Trigger::Or { terms } | Trigger::And { terms } => {
                for t in terms {
                    t.for_each_pred(f)
                }
            }
            Trigger::Not { inner } | Trigger::Group { inner } => inner.for_each_pred(f),
            Trigger::Pred { pred } => f(pred),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CrossDir {
    Above,
    Below,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum CmpOp {
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = "<=")]
    Le,
}

impl CmpOp {
    pub fn as_str(self) -> &'static str {
        match self {
            CmpOp::Gt => ">",
            CmpOp::Lt => "<",
            CmpOp::Ge => ">=",
            CmpOp::Le => "<=",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Open,
    Close,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "pred", rename_all = "kebab-case")]
pub enum Predicate {
    /// `<series> crosses above|below <value>`. `held` is parsed so that rule `held-cross` can
    /// refuse it with a guided message; a valid document never has it.
    Cross {
        series: Series,
        dir: CrossDir,
        value: Value,
        held: Option<Dur>,
        span: Span,
    },
    Compare {
        series: Series,
        op: CmpOp,
        value: Value,
        held: Option<Dur>,
        span: Span,
    },
    Event {
        event: Event,
        within: Option<Dur>,
        span: Span,
    },
    /// `T-<minutes>`: from n minutes before the close onwards.
    TMinus {
        minutes: Num,
        span: Span,
    },
    Phase {
        phase: Phase,
        span: Span,
    },
}

impl Predicate {
    pub fn span(&self) -> Span {
        match self {
            Predicate::Cross { span, .. }
            | Predicate::Compare { span, .. }
            | Predicate::Event { span, .. }
            | Predicate::TMinus { span, .. }
            | Predicate::Phase { span, .. } => *span,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum SeriesKind {
    Spot,
    Hod,
    Lod,
    Vwap,
    Open,
    PriorClose,
    Velocity {
        window: Dur,
    },
    Pnl,
    Time,
    FillsAvgPx,
    /// `<SYM>.spot`: another symbol's spot.
    SymSpot {
        sym: Sym,
    },
    Mark,
    Mid,
    Bid,
    Ask,
}

impl SeriesKind {
    /// Leg-quote series: marks, which exits may not condition on.
    pub fn is_leg_quote(&self) -> bool {
        matches!(
            self,
            SeriesKind::Mark | SeriesKind::Mid | SeriesKind::Bid | SeriesKind::Ask
        )
    }
}

/// Builds a [`SeriesKind`] without arguments.
pub type SeriesCtor = fn() -> SeriesKind;

/// Simple series names (those without arguments) and their kinds.
pub const SIMPLE_SERIES: &[(&str, SeriesCtor)] = &[
    ("spot", || SeriesKind::Spot),
    ("hod", || SeriesKind::Hod),
    ("lod", || SeriesKind::Lod),
    ("vwap", || SeriesKind::Vwap),
    ("open", || SeriesKind::Open),
    ("prior-close", || SeriesKind::PriorClose),
    ("pnl", || SeriesKind::Pnl),
    ("time", || SeriesKind::Time),
    ("fills.avg_px", || SeriesKind::FillsAvgPx),
    ("mark", || SeriesKind::Mark),
    ("mid", || SeriesKind::Mid),
    ("bid", || SeriesKind::Bid),
    ("ask", || SeriesKind::Ask),
];

/// A series reference. `text` is the name as written (`HOD`, `velocity`, `SPY.spot`); the
/// printer writes `text` (plus `(<dur>)` for velocity).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Series {
    pub kind: SeriesKind,
    pub text: String,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Value {
    Number {
        value: Num,
    },
    Clock {
        clock: Clock,
    },
    Series {
        series: Series,
    },
    /// `p95`, `p99.9`: the compared series' own intraday percentile. `pct` is the lexeme
    /// after `p`.
    Percentile {
        pct: Num,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Event {
    PlanFired { plan: Name },
    PlanFilled { plan: Name },
    Headline,
}

// ---------------------------------------------------------------- other statements

/// `POD <name> RISK day-loss <n>R -> halt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pod {
    pub name: Name,
    pub day_loss: Num,
}

/// `BOOK <name> budget <n>R coverage <SYM>[, <SYM>...]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Book {
    pub name: Name,
    pub budget: Num,
    pub coverage: Vec<Sym>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GradeSubject {
    Plan,
    Wake,
    View,
    Pod,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "kebab-case")]
pub enum GradeRange {
    /// A tape glob, e.g. `tapes/range-*`.
    Glob(String),
    /// `YYYY-MM[..YYYY-MM]`.
    Months { from: String, to: Option<String> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Counterfactual {
    Null,
    Ungated,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GradeClause {
    pub leading: Vec<Trivia>,
    pub kind: GradeClauseKind,
    pub trailing: Option<TrailingComment>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "clause", content = "value", rename_all = "kebab-case")]
pub enum GradeClauseKind {
    Vs(Counterfactual),
    /// `BY regime.intraday`, `BY lineage`: a dotted key.
    By(String),
}

/// `GRADE <subject> <name> OVER <range> FILL <model>` with VS / BY clauses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Grade {
    pub subject: GradeSubject,
    pub name: Name,
    pub over: GradeRange,
    pub fill: String,
    pub clauses: Vec<GradeClause>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StandDown {
    /// The rest of the line, verbatim, trimmed of the single separating space and of
    /// trailing whitespace; may be empty.
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cancel {
    pub target: Name,
}
