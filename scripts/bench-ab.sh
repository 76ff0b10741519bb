#!/usr/bin/env bash
# Two builds of `kestrel` side by side, as whole processes, in one alternated run: the
# before/after figures of docs/runtime.md ("Performance").
#
#   scripts/bench-ab.sh BIN_A BIN_B [ROUNDS]     # ROUNDS alternated rounds (default 21)
#
# BIN_A and BIN_B are two release binaries (e.g. `git worktree add /tmp/a <commit>` and
# `cargo build --release` there). Each round runs, for each binary in turn, `kestrel run
# --tape T --plans P --r-usd 1000 >/dev/null` on the shock tape with 0, 10 and 50 synthetic
# plans (`engine::synthetic_plans`, the busy set) and a start run (the tape's header and last
# tick, 0 plans). Prints the median wall time per binary and row, the net tick events/s (less
# the binary's start median), and B's speed-up over A from the medians. Runs from any directory.
set -euo pipefail

if [ $# -lt 2 ]; then
    sed -n '2,/^set -euo/p' "$0" | sed '$d'
    exit 1
fi
# The binaries as absolute paths, then work from the repo root (the tapes and the plans).
A="$(realpath -e -- "$1" 2>/dev/null || echo "$1")"
B="$(realpath -e -- "$2" 2>/dev/null || echo "$2")"
ROUNDS="${3:-21}"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
case "$ROUNDS" in '' | *[!0-9]*) echo "error code=USAGE message=ROUNDS must be a number" >&2; exit 1 ;; esac
for b in "$A" "$B"; do
    [ -x "$b" ] || { echo "error code=USAGE message=$b is not an executable" >&2; exit 1; }
done

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# shellcheck source=scripts/synthetic-plans.sh
. scripts/synthetic-plans.sh
for n in 0 10 50; do
    synthetic_plans "$n" >"$WORK/plans-$n.kestrel"
done
TAPE=tapes/shock-2025-04-09-s7.jsonl
head -n 1 "$TAPE" >"$WORK/start.jsonl"
tail -n 1 "$TAPE" >>"$WORK/start.jsonl"
TICKS=$(grep -c '"type":"tick"' "$TAPE")

echo "== bench-ab.sh $(date -u '+%Y-%m-%d %H:%M UTC'), $ROUNDS rounds; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "A = $A"
echo "B = $B"
ROWS=(start 0 10 50)
for ((r = 1; r <= ROUNDS; r++)); do
    for row in "${ROWS[@]}"; do
        for side in A B; do
            bin="${!side}"
            if [ "$row" = start ]; then tape="$WORK/start.jsonl" plans=0; else tape=$TAPE plans=$row; fi
            t0=$EPOCHREALTIME
            "$bin" run --tape "$tape" --plans "$WORK/plans-$plans.kestrel" --r-usd 1000 >/dev/null
            t1=$EPOCHREALTIME
            awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", (b - a) * 1000 }' >>"$WORK/$side-$row"
        done
    done
done
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
printf '%-6s %12s %12s %10s %10s %8s\n' plans "A median ms" "B median ms" "A net/s" "B net/s" "B/A"
sa=$(median "$WORK/A-start")
sb=$(median "$WORK/B-start")
printf '%-6s %12s %12s\n' start "$sa" "$sb"
for row in 0 10 50; do
    ma=$(median "$WORK/A-$row")
    mb=$(median "$WORK/B-$row")
    awk -v ma="$ma" -v mb="$mb" -v sa="$sa" -v sb="$sb" -v n="$TICKS" -v row="$row" 'BEGIN {
        printf "%-6s %12.2f %12.2f %9.2fM %9.2fM %7.2fx\n", row, ma, mb, n / (ma - sa) / 1000, n / (mb - sb) / 1000, ma / mb }'
done
echo "(net = tick events / (median - the binary's start median); B/A = A's median over B's)"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
