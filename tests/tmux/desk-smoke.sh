#!/usr/bin/env bash
# Drive the real desk binary in tmux as a person would, checking the screen at each step:
# bare `kestrel` (the README's first command: the bundled tape, the example plan armed at
# 1R = $1000, the house agent seated), then `--open` of what it saved (resumed where it was
# left, Home back to the open, nothing written until you act), the first hour played (a fire,
# a fill, a P&L that moves, an exit on screen), `--plans`; then open, play,
# write a plan in the editor and submit it, see it armed, stand down, undo that, quit, and check the
# saved session and its Bus. Then: the house agent in co-pilot (reject its turn), and a
# live command author answering off the replay thread.
#
#   KESTREL_TMUX=1 bash tests/tmux/desk-smoke.sh [path/to/kestrel]
#
# Skips (exit 0, says so) unless KESTREL_TMUX=1 and tmux is installed. Writes only under a
# temporary HOME / XDG dirs.
set -euo pipefail
if [[ "${KESTREL_TMUX:-}" != "1" ]]; then echo "SKIP: set KESTREL_TMUX=1 to run the tmux smoke check"; exit 0; fi
if ! command -v tmux >/dev/null; then echo "SKIP: tmux is not installed"; exit 0; fi
BIN="${1:-target/debug/kestrel}"
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"
TMP="$(mktemp -d)"
export HOME="$TMP" XDG_DATA_HOME="$TMP/data" XDG_CONFIG_HOME="$TMP/config"
S="kestrel-smoke-$$"
trap 'tmux kill-session -t "$S" 2>/dev/null || true; rm -rf "$TMP"' EXIT
PASSED=0
ok() { echo "ok: $1"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL: $1"; echo "--- screen ---"; tmux capture-pane -p -t "$S" || true; exit 1; }
screen() { tmux capture-pane -p -t "$S"; }
wait_for() { for _ in $(seq 1 50); do screen | grep -qF -- "$1" && return 0; sleep 0.2; done; fail "screen never showed: $1"; }
# Quit the desk, wait for it to exit, and set SES (the saved session) and BUS (its Bus).
quit_and_find_session() {
  tmux send-keys -t "$S" q
  for _ in $(seq 1 25); do tmux has-session -t "$S" 2>/dev/null || break; sleep 0.2; done
  sleep 0.5 # the tmux server exits with its last session: let it, before the next one starts
  SES="$(ls "$XDG_DATA_HOME"/kestrel/sessions/*.jsonl 2>/dev/null | grep -v '\.bus-' | head -1)"
  [[ -n "$SES" ]] || fail "$1"
  BUS="${SES%.jsonl}.bus-0.jsonl"
}

ENVS="env HOME=$HOME XDG_DATA_HOME=$XDG_DATA_HOME XDG_CONFIG_HOME=$XDG_CONFIG_HOME"
# Bare `kestrel`: the same session as `kestrel desk`, ready to trade.
tmux new-session -d -s "$S" -x 100 -y 30 "$ENVS $BIN"
wait_for "FRAME tape="
# At 100x30 the status line keeps the tape's name before the `author ` label.
wait_for "tape trend-2025-04-09-s1"
wait_for "house (autopilot)"
tmux send-keys -t "$S" g; tmux send-keys -t "$S" -l "10:30"; tmux send-keys -t "$S" Enter
wait_for "10:30:00.000"
quit_and_find_session "bare kestrel saved no session"
grep -q '"r_usd":1000' "$SES" || fail "the session does not record 1R = \$1000"
grep -q '"fill":"strict-cross-v1"' "$SES" || fail "the session does not record the fill model"
grep -q '"act":"turn","author":"examples"' "$SES" || fail "the example plan was not armed at the open"
grep -q '"type":"document-armed"' "$BUS" || fail "document-armed missing from the bare desk's Bus"
ok "bare kestrel opens ready to trade and saves its settings"
# The first session shows the product: play bare `kestrel` one simulated hour (at 600x, so the
# clock can be stopped at 10:30) and see a fire, a fill, a non-zero P&L and an exit on screen.
tmux new-session -d -s "$S" -x 160 -y 48 "$ENVS $BIN --no-save"
wait_for "author house"
tmux send-keys -t "$S" b; tmux send-keys -t "$S" +
wait_for "600x"
tmux send-keys -t "$S" ' '
for _ in $(seq 1 100); do screen | head -1 | grep -qE " 1[0-9]:[3-5][0-9]:| 1[1-9]:" && break; sleep 0.1; done
tmux send-keys -t "$S" ' '
wait_for "paused"
screen | head -1 | grep -qE " 10:[3-5]| 1[1-9]:" || fail "the clock did not reach 10:30"
screen | grep -qE "[A-Z]+#?[0-9]* fired [0-9]{2}:[0-9]{2}" || fail "no fire on screen in the first hour"
screen | grep -qE "fills \([1-9]" || fail "no fill in the Blotter in the first hour"
screen | grep -E "P&L [+-]" | grep -qvE "P&L [+-]0\.00\$" || fail "the Blotter P&L is zero"
screen | grep -qE "[0-9]{2}:[0-9]{2}:[0-9]{2} [a-z-]+ sell" || fail "no exit (a sell fill) in the first hour"
screen | grep -qF "1R = \$1000.00" || fail "1R's dollar value is not on screen"
tmux send-keys -t "$S" q
for _ in $(seq 1 25); do tmux has-session -t "$S" 2>/dev/null || break; sleep 0.2; done
sleep 0.5
ok "the default session fires, fills, moves and exits within the first hour"
# --open resumes where it was left, at the same hash; Home goes back to the open; nothing is
# written when the person only watches.
FIRST="$SES"
tmux new-session -d -s "$S" -x 160 -y 48 "$ENVS $BIN --open $FIRST"
wait_for "10:30:00.000"
wait_for "reopened"
tmux send-keys -t "$S" Home
wait_for "09:30:00.000"
tmux send-keys -t "$S" q
for _ in $(seq 1 25); do tmux has-session -t "$S" 2>/dev/null || break; sleep 0.2; done
sleep 0.5
[[ "$(ls "$XDG_DATA_HOME"/kestrel/sessions/ | grep -vc '\.bus-')" == "1" ]] || fail "--open wrote a new session though nobody acted"
ok "--open resumes, Home goes back to the open, nothing written"
# --plans arms documents at the open instead of the example.
rm -rf "$XDG_DATA_HOME/kestrel/sessions"
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
tmux new-session -d -s "$S" -x 200 -y 60 -c "$REPO" "$ENVS $BIN desk --no-agent --plans examples/fade-ladder.kestrel examples/shares.kestrel"
wait_for "band-fade"
wait_for "vwap-reclaim"
screen | grep -qF "vwap-flush" && fail "--plans should replace the example plan"
quit_and_find_session "no --plans session saved"
ok "--plans arms documents at the open"

# At 100x30: the status line keeps the hash and the footer keeps `? help` and `q quit`; the
# README's plan pasted (a bracketed paste, as a terminal sends it) lands verbatim and submits
# armed; the log opens with / and filters by kind.
rm -rf "$XDG_DATA_HOME/kestrel/sessions"
awk '/^```$/ && !done {if (on) {done=1; exit} on=1; next} on' "$REPO/README.md" > "$TMP/readme-plan.kestrel"
grep -q '^PLAN breakout-chase' "$TMP/readme-plan.kestrel" || fail "could not take the README's plan"
tmux new-session -d -s "$S" -x 100 -y 30 "$ENVS $BIN desk --no-agent --no-example"
wait_for "FRAME tape="
screen | head -1 | grep -qE 'hash [0-9a-f]{12}' || fail "the 100x30 status line lost the hash"
screen | tail -1 | grep -qF "? help" || fail "the 100x30 footer lost ? help"
screen | tail -1 | grep -qF "q quit" || fail "the 100x30 footer lost q quit"
ok "100x30 keeps the hash, ? help and q quit"
tmux send-keys -t "$S" e
tmux load-buffer -b readme "$TMP/readme-plan.kestrel"
tmux paste-buffer -p -b readme -t "$S"
wait_for "parses"
screen | grep -qF "    USING" && fail "the paste stacked indentation"
tmux send-keys -t "$S" C-s
wait_for "you: supersede"
tmux send-keys -t "$S" Escape; sleep 0.3
tmux send-keys -t "$S" Tab; sleep 0.2; tmux send-keys -t "$S" Tab
wait_for "breakout-chase"
screen | grep -F "breakout-chase" | grep -qF "armed" || fail "the pasted plan is not armed"
ok "the README's plan pasted, submitted, armed"
tmux send-keys -t "$S" /
wait_for "Filter"
tmux send-keys -t "$S" -l "armed"; tmux send-keys -t "$S" Enter
wait_for "/armed"
screen | grep -qE "^.*armed +breakout-chase" || fail "the filtered log does not show the armed row"
screen | grep -qE " session +" && fail "the filter kept a session row"
ok "the log opens and filters by kind"
quit_and_find_session "no paste session saved"

rm -rf "$XDG_DATA_HOME/kestrel/sessions"
tmux new-session -d -s "$S" -x 120 -y 36 "$ENVS $BIN desk --no-agent --no-example"
wait_for "FRAME tape="
wait_for "paused"
ok "desk open"
tmux send-keys -t "$S" ' '
wait_for "play"
tmux send-keys -t "$S" ' '
wait_for "paused"
ok "play / pause"
tmux send-keys -t "$S" e
for l in "PLAN smoke budget 0.05R ttl +20m" "USING signal SPX exec SPY 0dte" "WHEN spot crosses above 9000" "DO buy 1 +1 C @ fair-2c"; do
  tmux send-keys -t "$S" -l "$l"; tmux send-keys -t "$S" Enter
done
wait_for "parses"
tmux send-keys -t "$S" C-s
wait_for "you: supersede"
tmux send-keys -t "$S" Escape; sleep 0.4; tmux send-keys -t "$S" Tab; sleep 0.2; tmux send-keys -t "$S" Tab
wait_for "smoke"
screen | grep -F "smoke" | grep -qF "armed" || fail "plan smoke not armed"
ok "plan authored, submitted, armed"
tmux send-keys -t "$S" s
wait_for "reason"
tmux send-keys -t "$S" -l "smoke test done"; tmux send-keys -t "$S" Enter
wait_for "you: stand-down"
ok "stand-down"
tmux send-keys -t "$S" u
wait_for "Take back your"
tmux send-keys -t "$S" y
wait_for "undone: your"
screen | grep -F "smoke" | grep -qF "armed" || fail "the undone stand-down left plan smoke de-armed"
ok "u takes the stand-down back"
quit_and_find_session "no session saved"
grep -q '"action":"undo"' "$SES" || fail "the undo record is missing"
BUS1="${SES%.jsonl}.bus-1.jsonl"
[[ -f "$BUS1" ]] || fail "the run after the undo wrote no Bus file"
grep -q '"type":"stand-down"' "$BUS1" && fail "the Bus after the undo still has the stand-down"
grep -q '"type":"desk-session"' "$SES" || fail "session header missing"
grep -q '"act":"turn","author":"you"' "$SES" || fail "the person's turn act is missing"
grep -q 'STAND-DOWN smoke test done' "$SES" || fail "stand-down act missing"
grep -q '"type":"document-armed"' "$BUS" || fail "document-armed missing from the Bus"
grep -q '"type":"stand-down"' "$BUS" || fail "stand-down missing from the Bus"
ok "session and Bus saved"

# Co-pilot: the house agent's OPEN answer is proposed; reject it, quit, check the Bus.
rm -rf "$XDG_DATA_HOME/kestrel/sessions"
tmux new-session -d -s "$S" -x 160 -y 48 "env HOME=$HOME XDG_DATA_HOME=$XDG_DATA_HOME XDG_CONFIG_HOME=$XDG_CONFIG_HOME $BIN desk --copilot --no-example"
wait_for "house proposes supersede"
tmux send-keys -t "$S" x
wait_for "rejected house"
quit_and_find_session "no co-pilot session saved"
grep -q '"type":"view-delivered"' "$BUS" || fail "view-delivered missing from the Bus"
grep -q '"type":"turn-rejected"' "$BUS" || fail "turn-rejected missing from the Bus"
grep -q '"agent":"reject"' "$SES" || fail "reject act missing from the session"
ok "co-pilot reject on the Bus"

# A live command author (examples/command-author.sh): asked at the OPEN wake off the replay
# thread; its turn lands on the Bus and in the Journal.
rm -rf "$XDG_DATA_HOME/kestrel/sessions"
tmux new-session -d -s "$S" -x 160 -y 48 -c "$REPO" "env HOME=$HOME XDG_DATA_HOME=$XDG_DATA_HOME XDG_CONFIG_HOME=$XDG_CONFIG_HOME $BIN desk --no-example --author 'sh examples/command-author.sh'"
wait_for "@ wake open"
screen | grep -qF "last " || fail "the status line does not show the author's last answer"
quit_and_find_session "no live-author session saved"
grep -q '"live":"sh examples/command-author.sh"' "$SES" || fail "the agent record is missing"
grep -q '"agent":"answer"' "$SES" || fail "the answer act is missing"
grep -q '"type":"turn","wake":"open"' "$BUS" || fail "the live author's turn is missing from the Bus"
ok "a live command author answers on the Bus"

# Closing the terminal (tmux kill-session: a SIGHUP) while a command author is thinking: the
# desk leaves as q does (the session's `left` record) and the author's process group goes
# with it. It died at the hangup before, the author orphaned.
rm -rf "$XDG_DATA_HOME/kestrel/sessions"
PIDF="$TMP/hung-author.pid"
printf '#!/bin/sh\necho $$ > %s\nsleep 100000\n' "$PIDF" > "$TMP/hung-author.sh"
chmod +x "$TMP/hung-author.sh"
tmux new-session -d -s "$S" -x 160 -y 48 "$ENVS $BIN --no-example --author cmd:$TMP/hung-author.sh"
for _ in $(seq 1 50); do [[ -s "$PIDF" ]] && break; sleep 0.2; done
[[ -s "$PIDF" ]] || fail "the hanging author never started"
tmux kill-session -t "$S"
for _ in $(seq 1 40); do kill -0 "$(cat "$PIDF")" 2>/dev/null || break; sleep 0.2; done
! kill -0 "$(cat "$PIDF")" 2>/dev/null || fail "the author outlived the closed terminal"
for _ in $(seq 1 40); do pgrep -f "$BIN --no-example --author cmd:$TMP/hung-author.sh" >/dev/null || break; sleep 0.2; done
! pgrep -f "$BIN --no-example --author cmd:$TMP/hung-author.sh" >/dev/null || fail "the desk outlived the closed terminal"
SES="$(ls "$XDG_DATA_HOME"/kestrel/sessions/*.jsonl 2>/dev/null | grep -v '\.bus-' | head -1)"
grep -q '"action":"left"' "$SES" || fail "no left record after the terminal closed"
ok "a closed terminal leaves the session and takes the author with it"
echo "$PASSED passed, 0 failed"
