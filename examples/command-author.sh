#!/bin/sh
# An example command author (DESK.md §3): the desk writes the prompt (profile, card, View,
# menu) on stdin and reads one Kestrel turn from stdout. A real brain would call a model or a
# program here; this one reads the prompt, arms a WAKE on each headline at the open, and
# otherwise passes with a journal line (comments only), so the book keeps managing. A bare
# `headline` is latched (true from the first headline of the day on), so a WAKE on it rises
# once a day: `headline within 1s` is true for a second after each headline, and rises at each.
#
#   kestrel agent --tape T --author 'sh examples/command-author.sh'    (headless, issue 7)
prompt=$(cat)
if printf '%s\n' "$prompt" | grep -q '^FRAME .* woke=open '; then
  # The OPEN wake: arm a WAKE on each headline. A document is a supersede: it replaces this
  # author's standing book (in a headless run, plans armed with --plans are in it).
  printf '# waking at each headline\n'
  printf 'WAKE next-headline WHEN headline within 1s\n'
elif printf '%s\n' "$prompt" | awk '/^\[headlines\]$/ { getline; if ($0 != "none") seen = 1 } END { exit !seen }'; then
  # The View's headlines pane is `[headlines]` then `none` or one line per headline (the
  # card names `headline` too, so a plain grep of the prompt would always match).
  printf '# a headline crossed: the standing book (and the WAKE) keeps managing\n'
else
  printf '# nothing in the View calls for a change; the standing book keeps managing\n'
fi
