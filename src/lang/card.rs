//! The language card: the whole language as a prompt card (grammar, anchors, triggers,
//! panes, the fail-closed rules with their names, the menu, two short worked examples).
//!
//! The card is built from sections. Under a token budget, optional sections are shortened
//! or dropped in a fixed order (examples first, the rule summaries last) and the card says
//! what it dropped. The token counter is passed in, so this module does not depend on a
//! tokenizer.

use super::ast::PANE_CATALOG;
use super::diag::Rule;

/// Two short worked examples. Each passes `kestrel check` as a file (a test holds this).
pub const EXAMPLES: &[(&str, &str)] = &[
    (
        "a plan with its journal",
        "# Thesis: the open drive is real; velocity is top-decile.
# Wrong if spot loses VWAP for 90s.
PLAN drive-follow budget 0.2R ttl +40m regime {intraday: trend}
  USING signal SPX exec SPY 0dte
  WHEN spot crosses above hod AND velocity(1m) >= p90
  DO buy 1 +1 C @ min(fair, ask) peg cap fair
  TP 2x frac 0.5 @ fair
  EXIT spot < vwap held 90s @ fair
",
    ),
    (
        "a standing screen and the next wake",
        "# Range day: nothing to do until the range breaks.
VIEW range-scan budget 600
  tape 5m
  levels
  plans
WAKE range-break WHEN spot crosses above hod OR spot crosses below lod DELIVER range-scan
",
    ),
];

/// The one-line directive examples the card shows (each passes `kestrel check --turn`).
pub const DIRECTIVE_EXAMPLES: &[&str] = &[
    "STAND-DOWN edgeless chop; no defined-risk setup\n",
    "SHOW VIEW probe budget 900 # need dealer gamma before I commit\n  gex 0dte\n  skew 25d\n",
    "CANCEL drive-follow\n",
];

/// One section of the card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// A short name, used when the card says what it dropped.
    pub name: &'static str,
    /// Optional sections may be dropped under a budget.
    pub optional: bool,
    /// The section's text, ending in a newline.
    pub text: String,
    /// A shorter form used before dropping (or instead, for a required section).
    pub compact: Option<String>,
}

/// A built card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Card {
    /// The card as printed.
    pub text: String,
    /// Tokens of `text` as counted by the caller's counter.
    pub tokens: usize,
    /// What was shortened or dropped to meet the budget (`rules: names only`, `examples`).
    pub dropped: Vec<String>,
}

const HEADER: &str = "KESTREL LANGUAGE CARD (desk dialect v1)
Reply with a Kestrel document and nothing else: no JSON, no prose outside comments.
Own-line `# comments` are your journal (thesis first, and what proves it wrong).
A statement starts in column 1; its clauses follow, one per line, indented exactly two spaces.
A refused reply arms nothing: you are shown the error and asked again.
";

const TURN: &str = "## A turn is exactly one of
- a module of statements (PLAN, WAKE, VIEW, USING): supersedes the standing book; a WAKE schedules your next wake; a VIEW is a standing screen for future wakes
- STAND-DOWN <reason>              de-arm the standing book; inventory rides its TP/EXIT; reason = rest of the line
- SHOW VIEW <name> [budget <n>]    panes on indented lines; render now and ask again (only when the menu offers it); reason as a trailing # comment
- CANCEL <name>                    pull that resting order or plan
- only # comments                  pass: do nothing; the standing book keeps managing
Never mix a directive with statements; never two directives.
";

const STATEMENTS: &str = "## Statements
USING signal <SYM> exec <SYM> [0dte|1dte|YYYY-MM-DD]
VIEW <name> [budget <tokens>]            then one pane per indented line
WAKE <name> WHEN <trigger> [DELIVER <view>] [PRIORITY <n>] [BUDGET <n> wakes/day]
PLAN <name> budget <n>R ttl <HH:MM|+30m> [regime {<key>: <value>, ...}] [priority <n>]
  USING signal <SYM> exec <SYM> [<expiry>]   optional, overrides the module's USING
  WHEN <trigger>                             exactly one: the entry condition
  DO <ticket>                                at least one: the entry
  ALSO <ticket>                              a second leg fired with DO (hedge, cover)
  RELOAD WHEN <trigger> <ticket>             add on a later trigger (a ladder)
  TP <mult>x [frac <f>] @ <price> [<modifier> ...]   take profit at mult x cost, mult > 1
  EXIT <trigger> [@ <price> [<modifier> ...]]       active out, on the underlying only
  INVALIDATE <trigger> [-> halt | -> halt, ride]    thesis dead: stop adding
  CANCEL-IF <trigger>                        pull unfilled orders
  ARM <plan-name>                            when this plan fills, arm that one
Names are kebab-case: [a-z][a-z0-9-]*. <SYM> is upper case: SPX, SPY, BRK.B.
";

const TICKETS: &str = "## Tickets and prices
<ticket>   := (buy|sell) <qty> (<strike> (C|P) | shares) @ <price> [<modifier> ...]
<strike>   := ATM | +<n> | -<n> | <number>        strikes from at-the-money, or absolute
<modifier> := peg | fix | esc <price> <dur> | cap <price> | floor <price> | cancel-if <trigger> (last)
<price>    := <anchor>[(+|-)<n>[c|%]] | <number> | stub | lean(<p>, <p>, <w>) | min(<p>, <p>) | max(<p>, <p>)
Anchors: value = fair intrinsic basis; book = bid ask mid last join improve.
A series (spot, vwap, hod) is never a price. mid/last are marks: never the only anchor (min(fair, mid) is fine).
";

const ANCHORS: &str = "## Anchor meanings
fair = model worth; intrinsic = settlement floor; basis = your own average cost;
bid/ask/mid/last = quotes (mid and last are marks: they lie); join = rest at the same side's best;
improve = one tick better; stub = the minimum tick; lean(a, b, w) = a + w*(b-a), w in [0, 1];
offsets: fair-3c (cents), bid+0.05 (price units), fair+10% (percent of the anchor).
";

const TRIGGERS: &str = "## Triggers (one algebra for WAKE, PLAN and GRADE)
<trigger>   := <and> (OR <and>)* ; <and> := <unary> (AND <unary>)* ; <unary> := NOT <unary> | ( <trigger> ) | <predicate>
<predicate> := <series> crosses (above|below) <value>     an instant: never `held`
             | <series> (>|<|>=|<=) <value> [held <dur>]
             | plan(<name>).fired | plan(<name>).filled | headline [within <dur>]   (bare: true all day from the first)
             | T-<minutes> | phase (open|close)
<series> := spot hod lod vwap open prior-close velocity(<dur>) pnl time fills.avg_px <SYM>.spot | mark mid bid ask (leg quotes; not in EXIT/INVALIDATE)
<value>  := <number> | HH:MM | <series> | p<pct> (that series' intraday percentile: p90, p99.9)
Durations: 30s 5m 1h. Clock: 14:45. Relative ttl: +30m.
";

const PANE_DETAILS: &str = "tape [<dur>] (candles) | levels (HOD LOD VWAP open prior close) | chain <expiry> [strikes <n>] |
gex <expiry> (dealer gamma by strike) | skew <n>d (risk reversal) | velocity <dur> | kernel (positions, orders, budget) |
plans | blotter [last <n>] | journal [last <n>] | headlines [last <n>]
";

fn panes() -> String {
    format!("## Panes (VIEW, SHOW VIEW)\n{}\n", PANE_CATALOG.join(" "))
}

fn rules() -> String {
    let mut s = String::from("## Rules (a refusal names its rule)\n");
    for r in Rule::ALL {
        s.push_str(r.name());
        s.push_str(": ");
        s.push_str(r.summary());
        s.push('\n');
    }
    s
}

fn rule_names() -> String {
    let names: Vec<&str> = Rule::ALL.iter().map(|r| r.name()).collect();
    format!(
        "## Rules (a refusal names its rule)\n{}\n",
        names.join(", ")
    )
}

fn examples() -> String {
    let mut s = String::from("## Examples\n");
    for (i, (title, text)) in EXAMPLES.iter().enumerate() {
        s.push_str(&format!("Example {}: {title}\n{text}\n", i + 1));
    }
    s
}

fn directives() -> String {
    let mut s = String::from("## Directive examples (each is a whole reply)\n");
    for d in DIRECTIVE_EXAMPLES {
        s.push_str(d);
    }
    s
}

/// The card's sections in print order; `menu` is the menu text for the wake (see
/// `turn::Menu::prompt_text`).
pub fn sections(menu: &str) -> Vec<Section> {
    let mut panes_full = panes();
    panes_full.push_str(PANE_DETAILS);
    vec![
        Section {
            name: "header",
            optional: false,
            text: HEADER.into(),
            compact: None,
        },
        Section {
            name: "turn",
            optional: false,
            text: TURN.into(),
            compact: None,
        },
        Section {
            name: "statements",
            optional: false,
            text: STATEMENTS.into(),
            compact: None,
        },
        Section {
            name: "tickets",
            optional: false,
            text: TICKETS.into(),
            compact: None,
        },
        Section {
            name: "anchor meanings",
            optional: true,
            text: ANCHORS.into(),
            compact: None,
        },
        Section {
            name: "triggers",
            optional: false,
            text: TRIGGERS.into(),
            compact: None,
        },
        Section {
            name: "panes",
            optional: false,
            text: panes_full,
            compact: Some(panes()),
        },
        Section {
            name: "rules",
            optional: false,
            text: rules(),
            compact: Some(rule_names()),
        },
        Section {
            name: "menu",
            optional: false,
            text: format!("## The menu\n{}", menu.trim_end().to_string() + "\n"),
            compact: None,
        },
        Section {
            name: "directive examples",
            optional: true,
            text: directives(),
            compact: None,
        },
        Section {
            name: "examples",
            optional: true,
            text: examples(),
            compact: None,
        },
    ]
}

/// The order in which sections are shortened or dropped under a budget.
const DROP_ORDER: &[&str] = &[
    "examples",
    "directive examples",
    "anchor meanings",
    "panes",
    "rules",
];

fn assemble(secs: &[Section], dropped: &[String]) -> String {
    let mut s = String::new();
    for (i, sec) in secs.iter().enumerate() {
        if i > 0 {
            s.push('\n');
        }
        s.push_str(&sec.text);
    }
    if !dropped.is_empty() {
        s.push_str(&format!(
            "\n(card shortened for its token budget: {})\n",
            dropped.join("; ")
        ));
    }
    s
}

/// Build the card, within `budget` tokens when given (as counted by `count`). Fails when even
/// the required sections in their shortest form exceed the budget.
pub fn build(
    menu: &str,
    budget: Option<usize>,
    count: &dyn Fn(&str) -> usize,
) -> Result<Card, String> {
    let mut secs = sections(menu);
    let mut dropped: Vec<String> = Vec::new();
    let mut text = assemble(&secs, &dropped);
    let mut tokens = count(&text);
    let Some(budget) = budget else {
        return Ok(Card {
            text,
            tokens,
            dropped,
        });
    };
    let mut order = DROP_ORDER.iter();
    while tokens > budget {
        let Some(name) = order.next() else {
            return Err(format!(
                "the card needs at least {tokens} tokens even with every optional section dropped; the budget is {budget}"
            ));
        };
        let Some(i) = secs.iter().position(|s| s.name == *name) else {
            continue;
        };
        if let Some(c) = secs[i].compact.take() {
            secs[i].text = c;
            dropped.push(format!("{name}: names only"));
        } else if secs[i].optional {
            secs.remove(i);
            dropped.push((*name).to_string());
        } else {
            continue;
        }
        text = assemble(&secs, &dropped);
        tokens = count(&text);
    }
    Ok(Card {
        text,
        tokens,
        dropped,
    })
}
