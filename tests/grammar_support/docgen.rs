//! Documents generated from the typed model (every statement, clause, pane, price, trigger
//! and trivia kind), shared by the round-trip properties (`tests/roundtrip_prop.rs`) and the
//! grammar agreement tests (`tests/grammar.rs`).
#![allow(dead_code)]

use kestrel_desk::lang::ast::*;
use proptest::prelude::*;

fn sp() -> Span {
    Span::default()
}

fn name() -> impl Strategy<Value = Name> {
    "[a-z][a-z0-9-]{0,12}".prop_map(|text| Name { text, span: sp() })
}

fn num_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9]{1,4}",
        "[0-9]{1,3}\\.[0-9]{1,3}",
        "-[0-9]{1,3}(\\.[0-9]{1,2})?",
    ]
}

fn num() -> impl Strategy<Value = Num> {
    num_text().prop_map(|text| Num { text, span: sp() })
}

fn unum() -> impl Strategy<Value = Num> {
    prop_oneof!["[0-9]{1,4}", "[0-9]{1,3}\\.[0-9]{1,3}"].prop_map(|text| Num { text, span: sp() })
}

fn int() -> impl Strategy<Value = Num> {
    "[1-9][0-9]{0,3}".prop_map(|text| Num { text, span: sp() })
}

fn dur() -> impl Strategy<Value = Dur> {
    (
        "[0-9]{1,4}",
        prop_oneof![Just(DurUnit::S), Just(DurUnit::M), Just(DurUnit::H)],
    )
        .prop_map(|(text, unit)| Dur {
            amount: text.parse().unwrap_or(0),
            unit,
            text,
            span: sp(),
        })
}

fn clock() -> impl Strategy<Value = Clock> {
    (0u8..24, 0u8..60).prop_map(|(hour, minute)| Clock {
        hour,
        minute,
        span: sp(),
    })
}

fn sym() -> impl Strategy<Value = Sym> {
    "[A-Z][A-Z0-9]{0,4}(\\.[A-Z0-9]{1,2})?".prop_map(|text| Sym { text, span: sp() })
}

fn expiry() -> impl Strategy<Value = Expiry> {
    prop_oneof![
        (0u32..5).prop_map(Expiry::Dte),
        (2024u32..2030, 1u32..13, 1u32..29)
            .prop_map(|(y, m, d)| Expiry::Date(format!("{y:04}-{m:02}-{d:02}"))),
    ]
}

fn cased(s: &'static str) -> impl Strategy<Value = String> {
    prop_oneof![
        3 => Just(s.to_string()),
        1 => Just(s.to_ascii_uppercase()),
    ]
}

fn series() -> impl Strategy<Value = Series> {
    let simple = proptest::sample::select(
        SIMPLE_SERIES
            .iter()
            .map(|(n, k)| (*n, *k))
            .collect::<Vec<_>>(),
    )
    .prop_flat_map(|(n, k)| {
        // `fills.avg_px` and `prior-close` keep their spelling; the rest may be upper case.
        let text: BoxedStrategy<String> = if n.contains(['.', '-']) {
            Just(n.to_string()).boxed()
        } else {
            cased(n).boxed()
        };
        text.prop_map(move |text| Series {
            kind: k(),
            text,
            span: sp(),
        })
    });
    prop_oneof![
        6 => simple,
        1 => dur().prop_map(|window| Series { kind: SeriesKind::Velocity { window }, text: "velocity".into(), span: sp() }),
        1 => sym().prop_map(|s| Series { text: format!("{}.spot", s.text), kind: SeriesKind::SymSpot { sym: s }, span: sp() }),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        num().prop_map(|value| Value::Number { value }),
        clock().prop_map(|clock| Value::Clock { clock }),
        series().prop_map(|series| Value::Series { series }),
        unum().prop_map(|pct| Value::Percentile { pct }),
    ]
}

fn predicate() -> impl Strategy<Value = Predicate> {
    prop_oneof![
        (
            series(),
            any::<bool>(),
            value(),
            proptest::option::of(dur())
        )
            .prop_map(|(series, above, value, held)| Predicate::Cross {
                series,
                dir: if above {
                    CrossDir::Above
                } else {
                    CrossDir::Below
                },
                value,
                held,
                span: sp()
            }),
        (series(), 0..4usize, value(), proptest::option::of(dur())).prop_map(
            |(series, op, value, held)| Predicate::Compare {
                series,
                op: [CmpOp::Gt, CmpOp::Lt, CmpOp::Ge, CmpOp::Le][op],
                value,
                held,
                span: sp()
            }
        ),
        (
            prop_oneof![
                name().prop_map(|plan| Event::PlanFired { plan }),
                name().prop_map(|plan| Event::PlanFilled { plan }),
                Just(Event::Headline)
            ],
            proptest::option::of(dur())
        )
            .prop_map(|(event, within)| Predicate::Event {
                event,
                within,
                span: sp()
            }),
        "[0-9]{1,3}".prop_map(|t| Predicate::TMinus {
            minutes: Num {
                text: t,
                span: sp()
            },
            span: sp()
        }),
        any::<bool>().prop_map(|o| Predicate::Phase {
            phase: if o { Phase::Open } else { Phase::Close },
            span: sp()
        }),
    ]
}

/// Triggers shaped as the grammar produces them: OR of ANDs of unaries.
fn trigger() -> impl Strategy<Value = Trigger> {
    let leaf = predicate().prop_map(|pred| Trigger::Pred {
        pred: Box::new(pred),
    });
    leaf.prop_recursive(3, 16, 3, |inner| {
        let unary = prop_oneof![
            2 => inner.clone().prop_filter("pred", |t| matches!(t, Trigger::Pred { .. })),
            1 => inner.clone().prop_map(|t| Trigger::Group { inner: Box::new(t) }),
            1 => inner.clone().prop_map(|t| Trigger::Not { inner: Box::new(as_unary(t)) }),
        ];
        let and = proptest::collection::vec(unary.clone(), 2..4).prop_map(|terms| Trigger::And { terms });
        prop_oneof![
            2 => unary.clone(),
            1 => and.clone(),
            1 => proptest::collection::vec(prop_oneof![unary, and], 2..4).prop_map(|terms| Trigger::Or { terms }),
        ]
    })
}

fn as_unary(t: Trigger) -> Trigger {
    match t {
        Trigger::Or { .. } | Trigger::And { .. } => Trigger::Group { inner: Box::new(t) },
        t => t,
    }
}

fn anchor() -> impl Strategy<Value = Anchor> {
    proptest::sample::select(AnchorKind::ALL.to_vec()).prop_flat_map(|(n, kind)| {
        cased(n).prop_map(move |text| Anchor {
            kind,
            text,
            span: sp(),
        })
    })
}

fn price() -> impl Strategy<Value = Price> {
    let offset = (any::<bool>(), unum(), 0..3usize).prop_map(|(negative, amount, u)| Offset {
        negative,
        amount,
        unit: [OffsetUnit::Price, OffsetUnit::Cents, OffsetUnit::Percent][u],
    });
    let leaf = prop_oneof![
        4 => (anchor(), proptest::option::of(offset)).prop_map(|(anchor, offset)| Price::Anchor { anchor, offset }),
        1 => unum().prop_map(|value| Price::Number { value }),
        1 => cased("stub").prop_map(|text| Price::Stub { text, span: sp() }),
    ];
    leaf.prop_recursive(2, 8, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone(), num()).prop_map(|(a, b, w)| Price::Lean {
                a: Box::new(a),
                b: Box::new(b),
                w,
                span: sp()
            }),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Price::Min {
                a: Box::new(a),
                b: Box::new(b),
                span: sp()
            }),
            (inner.clone(), inner).prop_map(|(a, b)| Price::Max {
                a: Box::new(a),
                b: Box::new(b),
                span: sp()
            }),
        ]
    })
}

fn modifiers() -> impl Strategy<Value = Vec<Modifier>> {
    let m = prop_oneof![
        Just(Modifier::Peg),
        Just(Modifier::Fix),
        (price(), dur()).prop_map(|(price, after)| Modifier::Esc { price, after }),
        price().prop_map(|price| Modifier::Cap { price }),
        price().prop_map(|price| Modifier::Floor { price }),
    ];
    (
        proptest::collection::vec(m, 0..4),
        proptest::option::of(trigger()),
    )
        .prop_map(|(mut v, c)| {
            if let Some(when) = c {
                v.push(Modifier::CancelIf { when });
            }
            v
        })
}

fn ticket() -> impl Strategy<Value = Ticket> {
    let strike = prop_oneof![
        Just(Strike::Atm),
        ("[+-]", "[0-9]{1,2}").prop_map(|(s, n)| Strike::Relative(Num {
            text: format!("{s}{n}"),
            span: sp()
        })),
        "[1-9][0-9]{2,3}".prop_map(|t| Strike::Absolute(Num {
            text: t,
            span: sp()
        })),
    ];
    let instrument = prop_oneof![
        1 => Just(Instrument::Shares),
        4 => (strike, any::<bool>()).prop_map(|(strike, c)| Instrument::Option { strike, right: if c { Right::C } else { Right::P } }),
    ];
    (any::<bool>(), num(), instrument, price(), modifiers()).prop_map(
        |(buy, qty, instrument, price, modifiers)| Ticket {
            side: if buy { Side::Buy } else { Side::Sell },
            qty,
            instrument,
            price,
            modifiers,
            span: sp(),
        },
    )
}

fn comment_text() -> impl Strategy<Value = String> {
    "#[^\n\r]{0,30}"
}

fn trivia() -> impl Strategy<Value = Vec<Trivia>> {
    let t = prop_oneof![
        1 => Just(Trivia::Blank),
        2 => (prop_oneof![Just(""), Just("  "), Just("    "), Just("\t")], comment_text())
            .prop_map(|(i, c)| Trivia::Comment(format!("{i}{c}"))),
    ];
    proptest::collection::vec(t, 0..3).prop_map(|mut v| {
        v.dedup_by(|a, b| *a == Trivia::Blank && *b == Trivia::Blank);
        v
    })
}

fn trailing() -> impl Strategy<Value = Option<TrailingComment>> {
    proptest::option::weighted(
        0.3,
        ("[ \t]{0,3}", comment_text()).prop_map(|(gap, text)| TrailingComment { gap, text }),
    )
}

fn using() -> impl Strategy<Value = Using> {
    (sym(), sym(), proptest::option::of(expiry())).prop_map(|(signal, exec, expiry)| Using {
        signal,
        exec,
        expiry,
    })
}

fn clause_kind() -> impl Strategy<Value = ClauseKind> {
    prop_oneof![
        using().prop_map(ClauseKind::Using),
        trigger().prop_map(ClauseKind::When),
        ticket().prop_map(ClauseKind::Do),
        ticket().prop_map(ClauseKind::Also),
        (trigger(), ticket()).prop_map(|(when, ticket)| ClauseKind::Reload { when, ticket }),
        (unum(), proptest::option::of(unum()), price(), modifiers()).prop_map(
            |(mult, frac, price, modifiers)| ClauseKind::Tp {
                mult,
                frac,
                price,
                modifiers
            }
        ),
        (trigger(), proptest::option::of((price(), modifiers()))).prop_map(|(when, pm)| match pm {
            Some((price, modifiers)) => ClauseKind::Exit {
                when,
                price: Some(price),
                modifiers
            },
            None => ClauseKind::Exit {
                when,
                price: None,
                modifiers: vec![]
            },
        }),
        (trigger(), 0..3usize).prop_map(|(when, a)| ClauseKind::Invalidate {
            when,
            action: [
                None,
                Some(InvalidateAction::Halt),
                Some(InvalidateAction::HaltRide)
            ][a]
        }),
        trigger().prop_map(ClauseKind::CancelIf),
        name().prop_map(ClauseKind::Arm),
    ]
}

fn pane() -> impl Strategy<Value = Pane> {
    prop_oneof![
        proptest::option::of(dur()).prop_map(|bar| Pane::Tape { bar }),
        Just(Pane::Levels),
        (expiry(), proptest::option::of(int()))
            .prop_map(|(expiry, strikes)| Pane::Chain { expiry, strikes }),
        expiry().prop_map(|expiry| Pane::Gex { expiry }),
        unum().prop_map(|delta| Pane::Skew { delta }),
        dur().prop_map(|window| Pane::Velocity { window }),
        Just(Pane::Kernel),
        Just(Pane::Plans),
        proptest::option::of(int()).prop_map(|last| Pane::Blotter { last }),
        proptest::option::of(int()).prop_map(|last| Pane::Journal { last }),
        proptest::option::of(int()).prop_map(|last| Pane::Headlines { last }),
    ]
}

fn view() -> impl Strategy<Value = View> {
    (
        name(),
        proptest::option::of(int()),
        proptest::collection::vec((trivia(), pane(), trailing()), 0..4),
    )
        .prop_map(|(name, budget, panes)| View {
            name,
            budget,
            panes: panes
                .into_iter()
                .map(|(leading, pane, trailing)| PaneLine {
                    leading,
                    pane,
                    trailing,
                    span: sp(),
                })
                .collect(),
        })
}

pub fn statement_kind() -> impl Strategy<Value = StatementKind> {
    let plan = (
        name(),
        num(),
        prop_oneof![clock().prop_map(Ttl::At), dur().prop_map(Ttl::After)],
        proptest::option::of(proptest::collection::vec(
            ("[a-z][a-z0-9_.-]{0,6}", "[a-z][a-z0-9_.-]{0,6}"),
            1..3,
        )),
        proptest::option::of(int()),
        proptest::collection::vec((trivia(), clause_kind(), trailing()), 0..6),
    )
        .prop_map(|(name, budget, ttl, regime, priority, clauses)| {
            StatementKind::Plan(Plan {
                name,
                budget,
                ttl,
                regime: regime.map(|r| {
                    r.into_iter()
                        .map(|(key, value)| RegimeEntry { key, value })
                        .collect()
                }),
                priority,
                clauses: clauses
                    .into_iter()
                    .map(|(leading, kind, trailing)| Clause {
                        leading,
                        kind,
                        trailing,
                        span: sp(),
                    })
                    .collect(),
            })
        });
    let wake = (
        name(),
        trigger(),
        proptest::option::of(name()),
        proptest::option::of(int()),
        proptest::option::of(int()),
    )
        .prop_map(|(name, when, deliver, priority, budget)| {
            StatementKind::Wake(Wake {
                name,
                when,
                deliver,
                priority,
                budget,
            })
        });
    let grade = (
        name(),
        0..4usize,
        prop_oneof![
            "tapes/[a-z*-]{1,8}".prop_map(GradeRange::Glob),
            (
                2020u32..2030,
                1u32..13,
                proptest::option::of((2020u32..2030, 1u32..13))
            )
                .prop_map(|(y, m, to)| GradeRange::Months {
                    from: format!("{y:04}-{m:02}"),
                    to: to.map(|(y, m)| format!("{y:04}-{m:02}")),
                }),
        ],
        "[a-z][a-z0-9.-]{0,10}",
        proptest::collection::vec(
            (
                trivia(),
                prop_oneof![
                    Just(GradeClauseKind::Vs(Counterfactual::Null)),
                    Just(GradeClauseKind::Vs(Counterfactual::Ungated)),
                    "[a-z][a-z0-9_.-]{0,10}".prop_map(GradeClauseKind::By),
                ],
                trailing(),
            ),
            0..3,
        ),
    )
        .prop_map(|(name, s, over, fill, clauses)| {
            StatementKind::Grade(Grade {
                subject: [
                    GradeSubject::Plan,
                    GradeSubject::Wake,
                    GradeSubject::View,
                    GradeSubject::Pod,
                ][s],
                name,
                over,
                fill,
                clauses: clauses
                    .into_iter()
                    .map(|(leading, kind, trailing)| GradeClause {
                        leading,
                        kind,
                        trailing,
                        span: sp(),
                    })
                    .collect(),
            })
        });
    prop_oneof![
        6 => plan,
        2 => view().prop_map(StatementKind::View),
        1 => view().prop_map(StatementKind::ShowView),
        2 => wake,
        1 => grade,
        1 => (name(), "[a-z./][a-z0-9./_-]{0,16}").prop_map(|(name, path)| StatementKind::Import(Import { name, path })),
        1 => using().prop_map(StatementKind::Using),
        1 => (name(), num()).prop_map(|(name, day_loss)| StatementKind::Pod(Pod { name, day_loss })),
        1 => (name(), num(), proptest::collection::vec(sym(), 1..4)).prop_map(|(name, budget, coverage)| StatementKind::Book(Book { name, budget, coverage })),
        1 => "([^#\n\r\t ]([^#\n\r]{0,20}[^#\n\r\t ])?)?".prop_map(|reason| StatementKind::StandDown(StandDown { reason })),
        1 => name().prop_map(|target| StatementKind::Cancel(Cancel { target })),
    ]
}

pub fn document() -> impl Strategy<Value = Document> {
    (
        proptest::collection::vec((trivia(), statement_kind(), trailing()), 0..6),
        trivia(),
    )
        .prop_map(|(sts, mut tail)| {
            let mut statements: Vec<Statement> = sts
                .into_iter()
                .map(|(leading, kind, trailing)| Statement {
                    leading,
                    kind,
                    trailing,
                    span: sp(),
                })
                .collect();
            // Canonical form: no blank lines before the first statement or after the last line.
            if let Some(first) = statements.first_mut() {
                while first.leading.first() == Some(&Trivia::Blank) {
                    first.leading.remove(0);
                }
            } else {
                while tail.first() == Some(&Trivia::Blank) {
                    tail.remove(0);
                }
            }
            while tail.last() == Some(&Trivia::Blank) {
                tail.pop();
            }
            Document { statements, tail }
        })
}
