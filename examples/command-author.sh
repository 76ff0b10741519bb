#!/bin/sh
# An example command author (DESK.md §3): the desk writes the prompt (profile, card, View,
# menu) on stdin and reads one Kestrel turn from stdout. A real brain would call a model or a
# program here; this one reads the prompt, keeps a journal line and passes unless the View
# shows a headline, in which case it asks to be woken on the next one.
#
#   kestrel agent --tape T --author 'sh examples/command-author.sh'    (headless, issue 7)
prompt=$(cat)
if printf '%s' "$prompt" | grep -q 'headline'; then
  printf '# a headline is in the View: wait for the next one before acting\n'
  printf 'WAKE next-headline WHEN headline\n'
else
  printf '# nothing in the View calls for a change; the standing book keeps managing\n'
fi
