#!/usr/bin/env bash
# Kestrel against hftbacktest, whole process, on the same events (issue 19, "figures that
# reproduce").
#
#   scripts/bench-peers.sh                      # 5 alternated rounds on the trend tape
#   scripts/bench-peers.sh --runs 11            # N rounds (at least 5)
#   scripts/bench-peers.sh --reps 20            # processes per timed measurement (default 20)
#   scripts/bench-peers.sh --tape tapes/shock-2025-04-09-s7.jsonl
#   scripts/bench-peers.sh --callgrind          # also instruction counts (valgrind callgrind)
#
# What it does, in order:
#
# 1. Builds `target/release/kestrel` (`cargo build --release --bin kestrel`) and the peer,
#    `scripts/peers/hftbacktest` (its own crate and Cargo.lock: hftbacktest =0.9.4 from
#    crates.io, features ["backtest"]; `cargo build --release --locked`), both under
#    `nice -n 10`.
# 2. Converts every tape in tapes/ with `peer-hftbacktest convert TAPE DIR`: the exec symbol's
#    (SPY's) ticks become hftbacktest depth + trade events (`exec.npy`), the other symbol's
#    (SPX's) trades a second asset (`other.npy`); iv and headline events have no counterpart
#    and are dropped (the count is printed). The same step writes the Kestrel plan files:
#    plans-{0,1,10,50}.kestrel (`WHEN spot crosses above L` / `DO buy 10 shares @ ask` /
#    `EXIT spot crosses below L-0.50`, levels spread between the opening print and the high)
#    and hold-50.kestrel (50 plans that buy at the first print and hold to the close), and the
#    peer's levels-N.txt. For the trend tape the plan files must equal the committed copies in
#    scripts/peers/plans/trend/. Every plan file must pass `kestrel check`.
# 3. Agreement: for every tape and case, runs both once and prints each side's fills and P&L
#    (Kestrel: the sum of `fills` and `pnl_usd` of `kestrel run --json`; the peer's summary
#    line), and compares the fills one by one (time, side, price, quantity: Kestrel's `fill`
#    events from `--bus`, the peer's from `--fills`). A difference is printed as DIFFER and
#    makes the script exit 2 at the end (the timings are still taken and printed).
# 4. Timing on one tape (default the trend tape): 5 cases (0, 1, 10, 50 crossing plans, 50
#    holders) x 2 sides, alternated: each round runs every (case, side) once, the side that
#    goes first alternating by round. One measurement is `/usr/bin/time -f '%e %U %S %M'` of a
#    bash loop running the whole process REPS times back to back (GNU time prints CPU seconds
#    to 0.01 s, coarser than one process; the loop divides the resolution by REPS; the loop's
#    own bash costs about 1 ms per measurement, on both sides alike). Per process: wall ms,
#    CPU ms (user + sys; the medians of each also apart) and peak RSS (the largest of the REPS
#    processes). Prints min / median / max per case and side, and the Kestrel / hftbacktest CPU ratio per case: of the medians,
#    and min-max over the rounds (each round's two measurements are taken back to back).
# 5. With --callgrind: `valgrind --tool=callgrind` of one whole process per case and side;
#    instructions executed (Ir, "Collected"), which do not move with the machine's load.
#
# The two sides do not do the same work beyond the strategies: Kestrel serialises every Bus
# event to canonical JSON, hashes the bytes with BLAKE3 and projects them into its Blotter (no
# --bus file is written here: the Bus only hashes), parses and checks the plan text,
# maintains its market state for every symbol (spot, hod, lod, vwap, velocity, percentiles,
# the option model on iv events), and evaluates its plans on every tape event (SPX ticks and
# iv events included); the peer wakes once per timestamp (`wait_next_feed` returns after
# every event with the same timestamp; SPX and SPY print in the same millisecond, so about
# one wake-up a second). docs/runtime.md "Against hftbacktest" lists this.
#
# Needs: bash >= 4, cargo (network for the peer's first build, or a filled ~/.cargo
# registry), /usr/bin/time (Debian package `time`), awk, sort; valgrind for --callgrind.
# Exit codes: 0 done, 1 usage or environment, 2 the two sides' fills or P&L differ.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

RUNS=5
REPS=20
CALLGRIND=0
TAPE=tapes/trend-2025-04-09-s1.jsonl
usage() { echo "error code=USAGE message=$1 (see --help)" >&2; exit 1; }
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) [ $# -ge 2 ] || usage "--runs needs a number"; shift; RUNS="$1" ;;
        --reps) [ $# -ge 2 ] || usage "--reps needs a number"; shift; REPS="$1" ;;
        --tape) [ $# -ge 2 ] || usage "--tape needs a file"; shift; TAPE="$1" ;;
        --callgrind) CALLGRIND=1 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
        *) usage "unknown argument '$1'" ;;
    esac
    shift
done
case "$RUNS" in ''|*[!0-9]*) usage "--runs takes a whole number" ;; esac
case "$REPS" in ''|*[!0-9]*) usage "--reps takes a whole number" ;; esac
[ "$RUNS" -ge 5 ] || usage "--runs must be at least 5 (min/median/max of >= 5 rounds)"
[ "$REPS" -ge 1 ] || usage "--reps must be at least 1"
[ -f "$TAPE" ] || usage "no tape at '$TAPE'"
if [ ! -x /usr/bin/time ]; then
    echo "error code=ENV message=/usr/bin/time is missing (Debian: apt-get install -y time)" >&2
    exit 1
fi
if [ "$CALLGRIND" = 1 ] && ! command -v valgrind >/dev/null 2>&1; then
    echo "error code=ENV message=--callgrind needs valgrind" >&2
    exit 1
fi

echo "== bench-peers.sh $(date -u '+%Y-%m-%d %H:%M UTC') commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), nproc $(nproc)"
echo "load before: $(uptime)"

PEER_DIR=scripts/peers/hftbacktest
nice -n 10 cargo build --release --quiet --bin kestrel
nice -n 10 cargo build --release --quiet --locked --manifest-path "$PEER_DIR/Cargo.toml"
KESTREL=target/release/kestrel
PEER="$PEER_DIR/target/release/peer-hftbacktest"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

CASES=(0 1 10 50 hold50)
plans_of() { # dir case -> plan file
    if [ "$2" = hold50 ]; then echo "$1/hold-50.kestrel"; else echo "$1/plans-$2.kestrel"; fi
}
peer_args() { # dir case -> run arguments
    if [ "$2" = hold50 ]; then echo "run $1 hold 50"; else echo "run $1 cross $2"; fi
}

# 2. Convert every tape; check the plan files.
for t in tapes/*.jsonl "$TAPE"; do
    d="$WORK/$(basename "$t" .jsonl)"
    [ -d "$d" ] && continue
    "$PEER" convert "$t" "$d"
    for c in "${CASES[@]}"; do
        if ! "$KESTREL" check "$(plans_of "$d" "$c")" >/dev/null; then
            echo "error code=PLANS message=$(plans_of "$d" "$c") does not check" >&2
            exit 1
        fi
    done
done
TREND="$WORK/trend-2025-04-09-s1"
if [ -d "$TREND" ]; then
    for c in "${CASES[@]}"; do
        f="$(plans_of "$TREND" "$c")"
        if ! cmp -s "$f" "scripts/peers/plans/trend/$(basename "$f")"; then
            echo "error code=PLANS message=$(basename "$f") differs from scripts/peers/plans/trend/" >&2
            exit 1
        fi
    done
fi

# 3. Agreement on fills and P&L.
DIFFER=0
echo
echo "== fills and P&L, each side (Kestrel: sum of the plans' fills, book pnl_usd); fill by fill"
printf '%-28s %-7s %14s %14s %12s %12s  %s\n' tape case "kestrel fills" "peer fills" "kestrel $" "peer $" "fill by fill"
for t in tapes/*.jsonl; do
    d="$WORK/$(basename "$t" .jsonl)"
    for c in "${CASES[@]}"; do
        # shellcheck disable=SC2046
        read -r kf kp < <("$KESTREL" run --tape "$t" --plans "$(plans_of "$d" "$c")" --json \
            --bus "$WORK/bus.jsonl" |
            grep -o '"fills":[0-9]*\|"pnl_usd":[-0-9.e]*' |
            awk -F: '/fills/ { f += $2 } /pnl_usd/ { p = $2 } END { printf "%d %.2f\n", f, p }')
        # shellcheck disable=SC2046
        line="$("$PEER" $(peer_args "$d" "$c") --fills "$WORK/peer-fills.txt")"
        pf="$(sed -n 's/.* fills=\([0-9]*\) .*/\1/p' <<<"$line")"
        pp="$(sed -n 's/.* pnl_usd=\([-0-9.]*\) .*/\1/p' <<<"$line")"
        # Kestrel's fill events as `ts side price qty`, like the peer's lines.
        { grep '"type":"fill"' "$WORK/bus.jsonl" || true; } |
            sed 's/.*"px":"\([0-9.]*\)".*"qty":\([0-9]*\).*"side":"\([a-z]*\)".*"ts":"\([0-9:.]*\)".*/\4 \3 \1 \2/' |
            awk '{ printf "%s %s %.2f %d\n", $1, $2, $3, $4 }' | sort >"$WORK/k.fills"
        awk '{ printf "%s %s %.2f %d\n", $1, $2, $3, $4 }' "$WORK/peer-fills.txt" | sort >"$WORK/p.fills"
        verdict="agree ($(wc -l <"$WORK/k.fills") compared)"
        if [ "$kf" != "$pf" ] || ! awk -v a="$kp" -v b="$pp" 'BEGIN { exit !((a - b) ^ 2 < 1e-6) }' ||
            ! cmp -s "$WORK/k.fills" "$WORK/p.fills"; then
            verdict=DIFFER
            DIFFER=1
        fi
        printf '%-28s %-7s %14s %14s %12s %12s  %s\n' "$(basename "$t" .jsonl)" "$c" "$kf" "$pf" "$kp" "$pp" "$verdict"
    done
done

# 4. Alternated timing on one tape.
D="$WORK/$(basename "$TAPE" .jsonl)"
cmd_of() { # side case -> the whole-process command
    if [ "$1" = kestrel ]; then
        echo "$KESTREL run --tape $TAPE --plans $(plans_of "$D" "$2") --json"
    else
        echo "$PEER $(peer_args "$D" "$2")"
    fi
}
measure() { # side case -> appends "wall_ms cpu_ms rss_kib user_ms sys_ms" per process
    local side="$1" c="$2" cmd
    cmd="$(cmd_of "$side" "$c")"
    # shellcheck disable=SC2086
    /usr/bin/time -f '%e %U %S %M' -o "$WORK/t" \
        bash -c 'n=$1; shift; for ((i = 0; i < n; i++)); do "$@" >/dev/null; done' _ "$REPS" $cmd
    awk -v n="$REPS" '{ printf "%.3f %.3f %d %.3f %.3f\n", $1 * 1000 / n, ($2 + $3) * 1000 / n, $4,
        $2 * 1000 / n, $3 * 1000 / n }' \
        "$WORK/t" >>"$WORK/$side-$c.times"
}
echo
echo "== timing: $(basename "$TAPE"), $RUNS rounds, $REPS processes per measurement"
for ((r = 0; r < RUNS; r++)); do
    for c in "${CASES[@]}"; do
        if [ $((r % 2)) = 0 ]; then
            measure kestrel "$c"; measure peer "$c"
        else
            measure peer "$c"; measure kestrel "$c"
        fi
    done
done
echo "load after: $(uptime)"

# min median max of column $2 of file $1
mmm() { awk -v k="$2" '{ print $k }' "$1" | sort -g | awk '{ v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%.1f / %.1f / %.1f", v[1], m, v[NR] }'; }
med() { awk -v k="$2" '{ print $k }' "$1" | sort -g | awk '{ v[NR] = $1 } END {
    printf "%.4f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo
printf '%-7s %-8s %26s %26s %18s %10s\n' case side "wall ms min/med/max" "CPU ms min/med/max" \
    "user/sys ms (med)" "peak RSS"
for c in "${CASES[@]}"; do
    for side in kestrel peer; do
        f="$WORK/$side-$c.times"
        printf '%-7s %-8s %26s %26s %18s %6.1f MiB\n' "$c" "$side" "$(mmm "$f" 1)" "$(mmm "$f" 2)" \
            "$(printf '%.1f / %.1f' "$(med "$f" 4)" "$(med "$f" 5)")" \
            "$(awk '$3 > m { m = $3 } END { print m / 1024 }' "$f")"
    done
done
echo
printf '%-7s %22s %26s\n' case "CPU ratio (medians)" "per-round ratio min-max"
for c in "${CASES[@]}"; do
    printf '%-7s %22s %26s\n' "$c" \
        "$(awk -v a="$(med "$WORK/kestrel-$c.times" 2)" -v b="$(med "$WORK/peer-$c.times" 2)" 'BEGIN { printf "%.2fx", a / b }')" \
        "$(paste -d' ' "$WORK/kestrel-$c.times" "$WORK/peer-$c.times" |
            awk '{ r = $2 / $7; if (NR == 1 || r < lo) lo = r; if (NR == 1 || r > hi) hi = r }
                 END { printf "%.2f-%.2fx", lo, hi }')"
done

# 5. Instruction counts.
if [ "$CALLGRIND" = 1 ]; then
    echo
    echo "== callgrind: instructions of one whole process"
    printf '%-7s %16s %16s %8s\n' case kestrel peer ratio
    for c in "${CASES[@]}"; do
        declare -A IR=()
        for side in kestrel peer; do
            # shellcheck disable=SC2046
            valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" $(cmd_of "$side" "$c") \
                >/dev/null 2>"$WORK/cg.err"
            IR[$side]="$(sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' "$WORK/cg.err" | tail -1)"
        done
        printf '%-7s %16s %16s %7.2fx\n' "$c" "${IR[kestrel]}" "${IR[peer]}" \
            "$(awk -v a="${IR[kestrel]}" -v b="${IR[peer]}" 'BEGIN { print a / b }')"
        unset IR
    done
fi

if [ "$DIFFER" = 1 ]; then
    echo "error code=DIFFER message=the two sides' fills or P&L differ (table above)" >&2
    exit 2
fi
