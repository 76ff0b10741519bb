//! The desk's draw and replay figures (docs/desk.md): one full draw at 200x60 with a busy
//! session — the candle chart with fills marked, the log decoded — (goal: under 2 ms), and replay at max speed with the house agent answering its
//! wakes while drawing a frame after every 10 ms slice of engine work (tick events per
//! second).
//!
//! Run: `cargo bench --bench desk`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kestrel_desk::desk::{self, ui};
use kestrel_desk::market::Ts;
use kestrel_desk::session::{Command, Speed};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::hint::black_box;
use std::time::Duration;

fn bench(c: &mut Criterion) {
    // A busy session: the house agent seated (its turns in the Journal and Tokens panes),
    // the example plan armed, replayed to 13:00, then a stand-down.
    let house = Some(kestrel_desk::session::agent::Agent::house());
    let mut app =
        desk::inline_app_with(desk::tape_source(None).expect("tape"), house, false).expect("app");
    app.human_turn(desk::EXAMPLE_PLAN);
    app.human_turn(include_str!("../tests/chart-plans.kestrel"));
    app.send(Command::Seek(Ts::hms(13, 0, 0, 0)));
    app.human_turn("STAND-DOWN measured\n");
    app.tick();
    assert!(
        !app.snap.chart.marks.is_empty(),
        "the chart has marks to draw"
    );
    assert!(!app.log.shown().is_empty(), "the log has rows to draw");
    let mut t = Terminal::new(TestBackend::new(200, 60)).expect("terminal");
    c.bench_function("desk/draw 200x60 busy", |b| {
        b.iter(|| t.draw(|f| ui::draw(f, black_box(&app))).map(|_| ()))
    });

    // Replay a whole session at max speed, drawing after each 10 ms slice.
    let mut g = c.benchmark_group("desk/replay-while-drawing");
    g.sample_size(10);
    let events = {
        let mut a = desk::inline_app(desk::tape_source(None).expect("tape")).expect("app");
        a.send(Command::Speed(Speed::Max));
        a.send(Command::Play);
        while !a.snap.ended {
            a.send(Command::Tick(Duration::from_millis(10)));
        }
        a.snap.seq
    };
    g.throughput(Throughput::Elements(events));
    g.bench_function("full session, max speed", |b| {
        b.iter(|| {
            let house = Some(kestrel_desk::session::agent::Agent::house());
            let mut a = desk::inline_app_with(desk::tape_source(None).expect("tape"), house, false)
                .expect("app");
            a.human_turn(desk::EXAMPLE_PLAN);
            a.send(Command::Speed(Speed::Max));
            a.send(Command::Play);
            let mut t = Terminal::new(TestBackend::new(160, 48)).expect("terminal");
            while !a.snap.ended {
                a.send(Command::Tick(Duration::from_millis(10)));
                let _ = t.draw(|f| ui::draw(f, &a));
            }
            a.snap.seq
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
