#!/usr/bin/env bash
# Whole-process figures for `kestrel run` (issue 19, "figures that reproduce").
#
#   scripts/bench-whole.sh            # full: 11 alternated runs per cell, callgrind on all tapes
#   scripts/bench-whole.sh --quick    # 5 runs, shock tape only, callgrind on the shock tape
#   scripts/bench-whole.sh --runs N   # N alternated runs per cell (at least 5)
#   scripts/bench-whole.sh --no-callgrind
#
# What it does, in order:
#
# 1. `cargo build --release --bin kestrel` once (nothing else is built).
# 2. Writes the plan files into a temporary directory: 0, 10 and 50 synthetic plans, the same
#    text as `engine::synthetic_plans(n)` (five rotating templates; generated here, so the script
#    needs no Rust helper; every file is checked with `kestrel check`, and the 10-plan file's
#    byte count and sha256 are printed to compare), plus examples/run-desk.kestrel and the
#    level plans of the hftbacktest comparison (lv10, lv50: `WHEN spot crosses above L` /
#    `EXIT spot crosses below L-0.50`; hold50: 50 plans that buy and hold; the committed
#    files in scripts/peers/plans/trend/, levels set for the trend tape).
# 3. Writes a "start" tape: the shock tape's header and its last tick only. `kestrel run` on it
#    costs process start, header, plan parse and report, and next to no replay: its median wall
#    time is subtracted to give tick events/s *net of process start* (the gross figure is
#    printed too).
# 4. Runs `kestrel run --tape T --plans P --r-usd 1000` (report to /dev/null) under
#    `/usr/bin/time -f %M` for peak RSS, timing the wall clock with bash's $EPOCHREALTIME. The
#    runs are alternated: each round runs every (tape, plans) cell once, then the next round.
#    Prints min / median / max wall ms, tick events/s (net and gross, from the median) and peak
#    RSS (max over the runs) per cell.
# 5. `valgrind --tool=callgrind` once per cell: instructions executed by the whole process, and
#    per tape event net of the start tape's count. Instruction counts do not move with machine
#    load; wall times do (the script prints `uptime` before and after).
# 6. Parse as a whole process: `kestrel print` of the largest document the statement limit
#    admits that this generator makes (999 synthetic plans + USING = 1,000 statements, ~154 KB), against
#    `kestrel print` of the 1-plan document for the start cost; wall, peak RSS, and (with
#    callgrind) instructions per input byte.
# 7. Parse at the size limit: `kestrel print` of an 8,000,000-byte document (ladder plans:
#    `USING` + 990 plans with 102 RELOAD rungs each, within the 8 MiB and 1,000-statement limits;
#    `examples/doc_corpus.rs kestrel`) against toml_edit parsing and re-printing 8,000,000
#    bytes of TOML (`doc_corpus toml-roundtrip`), alternated; wall, peak RSS, peak RSS net of
#    the 1-plan print run per input byte, and (with callgrind) instructions of each.
#
# Deterministic inputs; the timings are whatever the machine gives. Needs: bash >= 5,
# /usr/bin/time (Debian package `time`), valgrind (optional, skipped with a note if missing).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

QUICK=0
RUNS=11
CALLGRIND=1
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=1; RUNS=5 ;;
        --runs) shift; RUNS="${1:?--runs needs a number}" ;;
        --no-callgrind) CALLGRIND=0 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
        *) echo "error code=USAGE message=unknown argument '$1' (see --help)" >&2; exit 1 ;;
    esac
    shift
done
case "$RUNS" in
    ''|*[!0-9]*) echo "error code=USAGE message=--runs takes a whole number" >&2; exit 1 ;;
esac
if [ "$RUNS" -lt 5 ]; then
    echo "error code=USAGE message=--runs must be at least 5 (min/median/max of >= 5 runs)" >&2
    exit 1
fi
if [ -z "${EPOCHREALTIME:-}" ]; then
    echo "error code=ENV message=bash >= 5 is needed (\$EPOCHREALTIME)" >&2
    exit 1
fi
if [ ! -x /usr/bin/time ]; then
    echo "error code=ENV message=/usr/bin/time is missing (Debian: apt-get install -y time)" >&2
    exit 1
fi
if [ "$CALLGRIND" = 1 ] && ! command -v valgrind >/dev/null 2>&1; then
    echo "note: valgrind not found; instruction counts skipped" >&2
    CALLGRIND=0
fi

echo "== bench-whole.sh $(date -u '+%Y-%m-%d %H:%M UTC') $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)," \
    "$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
echo "load before: $(uptime)"

cargo build --release --bin kestrel --example doc_corpus --quiet
BIN=target/release/kestrel
CORPUS=target/release/examples/doc_corpus

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# synthetic_plans N: the text of `engine::synthetic_plans(n)`.
# shellcheck source=scripts/synthetic-plans.sh
. scripts/synthetic-plans.sh

PLANSETS=(0 10 50 desk lv10 lv50 hold50)
for n in 0 10 50; do
    synthetic_plans "$n" >"$WORK/plans-$n.kestrel"
done
cp examples/run-desk.kestrel "$WORK/plans-desk.kestrel"
# The level plans of the hftbacktest comparison (docs/runtime.md "Against hftbacktest"; levels
# between the trend tape's opening print and its high, so on the other tapes they are never
# crossed and the plans wait parked), and its all-holding case.
cp scripts/peers/plans/trend/plans-10.kestrel "$WORK/plans-lv10.kestrel"
cp scripts/peers/plans/trend/plans-50.kestrel "$WORK/plans-lv50.kestrel"
cp scripts/peers/plans/trend/hold-50.kestrel "$WORK/plans-hold50.kestrel"
for p in "${PLANSETS[@]}"; do
    if ! "$BIN" check "$WORK/plans-$p.kestrel" >/dev/null; then
        echo "error code=PLANS message=plans-$p.kestrel does not check" >&2
        exit 1
    fi
done
echo "plans: 0/10/50 synthetic (engine::synthetic_plans), desk = examples/run-desk.kestrel," \
    "lv10/lv50/hold50 = scripts/peers/plans/trend/{plans-10,plans-50,hold-50}.kestrel;" \
    "plans-10: $(wc -c <"$WORK/plans-10.kestrel") bytes, sha256 $(sha256sum "$WORK/plans-10.kestrel" | cut -c1-16)"

if [ "$QUICK" = 1 ]; then
    TAPES=(tapes/shock-2025-04-09-s7.jsonl)
else
    TAPES=(tapes/*.jsonl)
fi

# The start tape: the shock tape's header and its last tick (a tape must reach the close).
START="$WORK/start.jsonl"
head -n 1 tapes/shock-2025-04-09-s7.jsonl >"$START"
grep '"type":"tick"' tapes/shock-2025-04-09-s7.jsonl | tail -n 1 >>"$START"

declare -A EVENTS TICKS
for t in "${TAPES[@]}" "$START"; do
    EVENTS[$t]=$(($(wc -l <"$t") - 1))
    TICKS[$t]=$(grep -c '"type":"tick"' "$t")
done

# One timed run: appends "wall_ms rss_kib" to $WORK/<cell>.times.
run_once() {
    local tape="$1" plans="$2" cell="$3" t0 t1 rss
    t0=$EPOCHREALTIME
    /usr/bin/time -f '%M' -o "$WORK/rss" \
        "$BIN" run --tape "$tape" --plans "$WORK/plans-$plans.kestrel" --r-usd 1000 >/dev/null
    t1=$EPOCHREALTIME
    rss=$(tail -n 1 "$WORK/rss")
    awk -v a="$t0" -v b="$t1" -v r="$rss" 'BEGIN { printf "%.3f %d\n", (b - a) * 1000, r }' \
        >>"$WORK/$cell.times"
}

cellname() { basename "$1" .jsonl | sed 's/-2025-04-09-s[0-9]*//'; }

# Warm the page cache and the binary once.
"$BIN" run --tape "$START" --plans "$WORK/plans-0.kestrel" --r-usd 1000 >/dev/null

for ((r = 1; r <= RUNS; r++)); do
    run_once "$START" 0 start-0
    for p in "${PLANSETS[@]}"; do
        for t in "${TAPES[@]}"; do
            run_once "$t" "$p" "$(cellname "$t")-$p"
        done
    done
done

# min median max of column 1, max of column 2.
stats() {
    sort -n -k1,1 "$1" | awk '{ w[NR] = $1; if ($2 > m) m = $2 }
        END { n = NR; med = (n % 2) ? w[(n + 1) / 2] : (w[n / 2] + w[n / 2 + 1]) / 2;
              printf "%.1f %.1f %.1f %.1f\n", w[1], med, w[n], m / 1024 }'
}

read -r s_min s_med s_max s_rss < <(stats "$WORK/start-0.times")
echo
echo "wall time of \`kestrel run --tape T --plans P --r-usd 1000 >/dev/null\`, $RUNS alternated runs per row"
echo "start = header + 1 tick, 0 plans (process start, parse, report): min/median/max $s_min/$s_med/$s_max ms, peak RSS $s_rss MiB"
printf '%-7s %-6s %7s %8s %24s %11s %11s %9s\n' tape plans events ticks "wall ms min/median/max" "net tick/s" "gross tick/s" "RSS MiB"
for p in "${PLANSETS[@]}"; do
    for t in "${TAPES[@]}"; do
        c="$(cellname "$t")-$p"
        read -r mn md mx rss < <(stats "$WORK/$c.times")
        awk -v name="$(cellname "$t")" -v p="$p" -v ev="${EVENTS[$t]}" -v tk="${TICKS[$t]}" \
            -v mn="$mn" -v md="$md" -v mx="$mx" -v s="$s_med" -v rss="$rss" 'BEGIN {
            net = md - s
            nets = (net > 0) ? sprintf("%.2f M", tk / net / 1000) : "n/a"
            printf "%-7s %-6s %7d %8d %24s %11s %11s %9.1f\n", name, p, ev, tk,
                sprintf("%.1f/%.1f/%.1f", mn, md, mx), nets, sprintf("%.2f M", tk / md / 1000), rss }'
    done
done
echo "(net = ticks / (median - start median); gross = ticks / median; RSS = max of the runs' /usr/bin/time %M)"

# Parse as a whole process: the largest synthetic document (1,000 statements) and a 1-plan one.
synthetic_plans 999 >"$WORK/doc-big.kestrel"
synthetic_plans 1 >"$WORK/doc-small.kestrel"
BIG_BYTES=$(wc -c <"$WORK/doc-big.kestrel")
SMALL_BYTES=$(wc -c <"$WORK/doc-small.kestrel")
print_once() {
    local doc="$1" t0 t1 rss
    t0=$EPOCHREALTIME
    /usr/bin/time -f '%M' -o "$WORK/rss" "$BIN" print "$WORK/doc-$doc.kestrel" >"$WORK/print.out"
    t1=$EPOCHREALTIME
    rss=$(tail -n 1 "$WORK/rss")
    awk -v a="$t0" -v b="$t1" -v r="$rss" 'BEGIN { printf "%.3f %d\n", (b - a) * 1000, r }' \
        >>"$WORK/print-$doc.times"
}
for ((r = 1; r <= RUNS; r++)); do
    print_once small
    print_once big
done
if ! cmp -s "$WORK/print.out" "$WORK/doc-big.kestrel"; then
    echo "note: kestrel print of the big document is not byte-identical to its input" >&2
fi
read -r ps_min ps_med ps_max ps_rss < <(stats "$WORK/print-small.times")
read -r pb_min pb_med pb_max pb_rss < <(stats "$WORK/print-big.times")
echo
echo "kestrel print, whole process, $RUNS alternated runs"
echo "1 plan ($SMALL_BYTES bytes): min/median/max $ps_min/$ps_med/$ps_max ms, peak RSS $ps_rss MiB"
echo "999 plans ($BIG_BYTES bytes): min/median/max $pb_min/$pb_med/$pb_max ms, peak RSS $pb_rss MiB"
awk -v b="$BIG_BYTES" -v s="$SMALL_BYTES" -v tb="$pb_med" -v ts="$ps_med" 'BEGIN {
    net = tb - ts
    if (net > 0) printf "net of the 1-plan run: %.1f MiB/s\n", (b - s) / 1048576 / (net / 1000)
    else print "net of the 1-plan run: n/a (below timer noise)" }'

# Parse at the size limit: 8,000,000 bytes of Kestrel against as much TOML, alternated.
LIMIT_BYTES=8000000
"$CORPUS" kestrel "$LIMIT_BYTES" >"$WORK/doc-limit.kestrel"
"$CORPUS" toml "$LIMIT_BYTES" >"$WORK/doc-limit.toml"
KL_BYTES=$(wc -c <"$WORK/doc-limit.kestrel")
TL_BYTES=$(wc -c <"$WORK/doc-limit.toml")
timed() {
    local out="$1" t0 t1 rss
    shift
    t0=$EPOCHREALTIME
    /usr/bin/time -f '%M' -o "$WORK/rss" "$@" >"$WORK/limit.out"
    t1=$EPOCHREALTIME
    rss=$(tail -n 1 "$WORK/rss")
    awk -v a="$t0" -v b="$t1" -v r="$rss" 'BEGIN { printf "%.3f %d\n", (b - a) * 1000, r }' >>"$out"
}
for ((r = 1; r <= RUNS; r++)); do
    timed "$WORK/limit-kestrel.times" "$BIN" print "$WORK/doc-limit.kestrel"
    timed "$WORK/limit-toml.times" "$CORPUS" toml-roundtrip "$WORK/doc-limit.toml"
done
"$BIN" print "$WORK/doc-limit.kestrel" | cmp -s - "$WORK/doc-limit.kestrel" ||
    echo "note: kestrel print of the limit document is not byte-identical to its input" >&2
"$CORPUS" toml-roundtrip "$WORK/doc-limit.toml" | cmp -s - "$WORK/doc-limit.toml" ||
    echo "note: the toml_edit round trip is not byte-identical to its input" >&2
read -r kl_min kl_med kl_max kl_rss < <(stats "$WORK/limit-kestrel.times")
read -r tl_min tl_med tl_max tl_rss < <(stats "$WORK/limit-toml.times")
echo
echo "parse + print at the size limit, whole process, $RUNS alternated runs"
echo "kestrel print ($KL_BYTES bytes): min/median/max $kl_min/$kl_med/$kl_max ms, peak RSS $kl_rss MiB"
echo "toml_edit round trip ($TL_BYTES bytes): min/median/max $tl_min/$tl_med/$tl_max ms, peak RSS $tl_rss MiB"
awk -v k="$kl_med" -v t="$tl_med" -v kr="$kl_rss" -v sr="$ps_rss" -v kb="$KL_BYTES" 'BEGIN {
    printf "toml_edit / kestrel print, medians: %.2fx; kestrel print peak RSS net of the 1-plan run: %.2f bytes per input byte\n",
        t / k, (kr - sr) * 1048576 / kb }'

if [ "$CALLGRIND" = 1 ]; then
    # Instructions executed (Ir) by the whole process, from callgrind's totals line.
    instr() {
        local out="$WORK/cg.out"
        rm -f "$out"
        valgrind --tool=callgrind --callgrind-out-file="$out" \
            "$BIN" run --tape "$1" --plans "$WORK/plans-$2.kestrel" --r-usd 1000 >/dev/null 2>"$WORK/cg.err"
        awk '/^(summary|totals):/ { print $2; exit }' "$out"
    }
    echo
    echo "valgrind --tool=callgrind, one run per row: instructions of the whole process"
    s_ir=$(instr "$START" 0)
    echo "start (header + 1 tick, 0 plans): $s_ir instructions"
    printf '%-7s %-6s %14s %16s %18s\n' tape plans instructions "per tape event" "net per tape event"
    for p in "${PLANSETS[@]}"; do
        for t in "${TAPES[@]}"; do
            ir=$(instr "$t" "$p")
            awk -v name="$(cellname "$t")" -v p="$p" -v ir="$ir" -v s="$s_ir" -v ev="${EVENTS[$t]}" 'BEGIN {
                printf "%-7s %-6s %14d %16.0f %18.0f\n", name, p, ir, ir / ev, (ir - s) / ev }'
        done
    done
    echo "(net = (instructions - start instructions) / tape events; tape events = lines - 1, ticks included)"
    pr_ir() {
        local out="$WORK/cg.out"
        rm -f "$out"
        valgrind --tool=callgrind --callgrind-out-file="$out" \
            "$BIN" print "$WORK/doc-$1.kestrel" >/dev/null 2>"$WORK/cg.err"
        awk '/^(summary|totals):/ { print $2; exit }' "$out"
    }
    ir_s=$(pr_ir small)
    ir_b=$(pr_ir big)
    ir_kl=$(pr_ir limit)
    rm -f "$WORK/cg.out"
    valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" \
        "$CORPUS" toml-roundtrip "$WORK/doc-limit.toml" >/dev/null 2>"$WORK/cg.err"
    ir_tl=$(awk '/^(summary|totals):/ { print $2; exit }' "$WORK/cg.out")
    awk -v k="$ir_kl" -v t="$ir_tl" -v kb="$KL_BYTES" -v tb="$TL_BYTES" 'BEGIN {
        printf "at the size limit, callgrind: kestrel print %.0f instructions (%.0f per byte), toml_edit round trip %.0f (%.0f per byte): toml_edit / kestrel %.2fx\n",
            k, k / kb, t, t / tb, t / k }'
    awk -v s="$ir_s" -v b="$ir_b" -v bs="$SMALL_BYTES" -v bb="$BIG_BYTES" 'BEGIN {
        printf "kestrel print, callgrind: 1 plan %d instructions, 999 plans %d; net %.0f instructions per input byte\n",
            s, b, (b - s) / (bb - bs) }'
fi

echo
echo "load after: $(uptime)"
