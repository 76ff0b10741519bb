#!/usr/bin/env bash
# Sourced by scripts/bench-whole.sh and scripts/bench-ab.sh: `synthetic_plans N` prints the
# text of `engine::synthetic_plans(n)` (src/engine/mod.rs), template for template (the busy
# synthetic set of docs/runtime.md, "Performance").

synthetic_plans() {
    local n="$1" i k
    printf 'USING signal SPX exec SPY 0dte\n'
    for ((i = 0; i < n; i++)); do
        k=$((i / 5 + 1))
        printf '\n'
        case $((i % 5)) in
            0) printf 'PLAN p%d budget 0.2R ttl 15:30\n  WHEN spot crosses above vwap AND NOT phase open\n  DO buy 1 +%d C @ fair+1c esc ask 30s\n  TP 1.5x frac 0.5 @ fair\n  EXIT spot crosses below vwap\n' "$i" $((k % 3)) ;;
            1) printf 'PLAN p%d budget 2R ttl 15:30\n  WHEN velocity(1m) < -0.0%d\n  DO buy 1 ATM P @ fair peg\n  TP 1.3x @ fair+2%%\n  EXIT T-15\n' "$i" $((k % 9 + 1)) ;;
            2) printf 'PLAN p%d budget 0.2R ttl 15:30\n  WHEN spot >= hod held %ds\n  DO buy 10 shares @ bid\n  RELOAD WHEN spot >= hod held 120s buy 10 shares @ bid\n  TP 1.002x @ ask\n  EXIT spot < vwap\n' "$i" $((10 + k)) ;;
            3) printf 'PLAN p%d budget 0.2R ttl 15:30\n  WHEN spot > p%d AND NOT phase open\n  DO buy 1 +2 C @ join cancel-if velocity(1m) < 0\n  TP 2x @ fair\n' "$i" $((90 + k % 9)) ;;
            *) printf 'PLAN p%d budget 0.2R ttl 15:45\n  WHEN time >= %d:%02d\n  DO buy 1 -1 P @ fair-2c esc fair 60s\n  INVALIDATE velocity(5m) > 0.3 -> halt, ride\n  EXIT spot > vwap\n' "$i" $((10 + k % 5)) $(((7 * k) % 60)) ;;
        esac
    done
}
