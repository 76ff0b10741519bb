#!/usr/bin/env bash
# Do two kestrel binaries write the same bytes? `kestrel run --json --bus` with each, over the
# bundled tapes (and any tapes in $EXTRA_TAPES) × plan files (the synthetic sets of
# scripts/synthetic-plans.sh for 0, 1, 10 and 50 plans, every examples/*.kestrel, the level
# plans of scripts/peers/plans/trend/, the percentile plans of scripts/bus-plans/, and any
# files in $EXTRA_PLANS); the report, the Bus
# file, stderr and the exit code are compared byte for byte. The check behind every "no Bus
# byte changed" in docs/runtime.md.
#
#   scripts/bus-identity.sh OLD_BINARY NEW_BINARY
#
# Prints one line per differing run and `runs=N differing=M`; exit 1 when any differ.
set -euo pipefail
A=${1:?usage: scripts/bus-identity.sh OLD_BINARY NEW_BINARY}
B=${2:?usage: scripts/bus-identity.sh OLD_BINARY NEW_BINARY}
cd "$(dirname "$0")/.."
. scripts/synthetic-plans.sh
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
mkdir -p "$D/plans"
for n in 0 1 10 50; do synthetic_plans "$n" > "$D/plans/synthetic-$n.kestrel"; done
for f in examples/*.kestrel scripts/peers/plans/trend/* scripts/bus-plans/* ${EXTRA_PLANS:+$EXTRA_PLANS/*}; do
  cp "$f" "$D/plans/$(basename "$f")"
done
runs=0
diffs=0
for T in tapes/*.jsonl ${EXTRA_TAPES:+$EXTRA_TAPES/*.jsonl}; do
  for P in "$D"/plans/*; do
    for X in A B; do
      BIN=$A
      [ "$X" = B ] && BIN=$B
      rc=0
      "$BIN" run --tape "$T" --plans "$P" --r-usd 1000 --json --bus "$D/bus.$X" \
        > "$D/out.$X" 2> "$D/err.$X" || rc=$?
      echo "$rc" > "$D/rc.$X"
      [ -f "$D/bus.$X" ] || : > "$D/bus.$X"
    done
    runs=$((runs + 1))
    for f in out bus err rc; do
      if ! cmp -s "$D/$f.A" "$D/$f.B"; then
        diffs=$((diffs + 1))
        echo "differs ($f): $T $(basename "$P")"
        break
      fi
    done
    rm -f "$D/bus.A" "$D/bus.B"
  done
done
echo "runs=$runs differing=$diffs"
[ "$diffs" -eq 0 ]
