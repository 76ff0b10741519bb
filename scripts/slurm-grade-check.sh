#!/usr/bin/env bash
# Run docs/grade.md's Slurm recipe, as written there, on a running Slurm (one node is enough:
# Debian's slurm-wlm with slurmctld and slurmd on localhost).
#
#   scripts/slurm-grade-check.sh path/to/kestrel [WORKDIR]
#
# The two batch scripts are taken from the docs' code blocks (`grade-array.sh`, `merge.sh`);
# only N and --array are changed for the N = 4 runs. It checks, printing one line per step:
#   1. N = 4 and N = 16: the afterany merge's grade/report.json is byte-identical to one
#      `kestrel grade … --json` run;
#   2. shard 2 of 4 cancelled before it starts: the merge still runs, refuses with
#      code=SHARD missing shards, and the stale grade/report.json is gone;
#   3. the one-shard rerun (`sbatch --array=2`) and a merge give the identical report.
# Exits non-zero at the first check that fails.
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 path/to/kestrel [WORKDIR]" >&2; exit 1; }
repo="$(cd "$(dirname "$0")/.." && pwd)"
bin="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
work="${2:-$(mktemp -d /tmp/kestrel-slurm.XXXXXX)}"
export PATH="$(dirname "$bin"):$PATH"   # the recipe assumes kestrel on PATH
command -v sbatch >/dev/null || { echo "sbatch not found: no Slurm here" >&2; exit 1; }

# The bash block after the line "`NAME`:" in docs/grade.md.
extract() {
  awk -v name="\`$1\`:" '$0 == name { f = 1; next } f && /^```bash/ { g = 1; next } g && /^```/ { exit } g { print }' \
    "$repo/docs/grade.md"
}

wait_job() { while [[ -n "$(squeue -h -j "$1" 2>/dev/null)" ]]; do sleep 1; done; }

cd "$work"
mkdir -p plans
cp "$repo/examples/grade.kestrel" plans/desk.kestrel
kestrel tape gen --count 6 --seed 100 -o tapes >/dev/null
kestrel grade plans/desk.kestrel --tapes tapes/ --json >single.json
extract grade-array.sh >grade-array-16.sh
extract merge.sh >merge.sh
grep -q -- '--array=0-15' grade-array-16.sh || { echo "FAIL: no grade-array.sh block in docs/grade.md" >&2; exit 1; }
sed -e 's/--array=0-15/--array=0-3/' -e 's/^N=16$/N=4/' grade-array-16.sh >grade-array-4.sh
echo "work directory: $work ($(sinfo -h -o '%N %c CPUs' | head -1); $(sbatch --version))"

for n in 4 16; do
  rm -rf logs grade
  mkdir -p logs grade
  jid=$(sbatch --parsable grade-array-$n.sh)
  mid=$(sbatch --parsable --dependency=afterany:${jid} merge.sh)
  wait_job "$mid"
  cmp grade/report.json single.json
  echo "ok: N=$n: merged grade/report.json is byte-identical to a single run ($(wc -c <single.json) bytes)"
done

rm -rf logs grade
mkdir -p logs grade
echo '{"stale": true}' >grade/report.json
jid=$(sbatch --parsable --hold grade-array-4.sh)
scancel "${jid}_2"
scontrol release "$jid"
mid=$(sbatch --parsable --dependency=afterany:${jid} merge.sh)
wait_job "$mid"
grep -q 'code=SHARD message=missing shards: 2/4' logs/merge.log
[[ ! -e grade/report.json ]]
echo "ok: shard 2/4 cancelled: the afterany merge ran and refused ($(grep -o 'code=SHARD.*' logs/merge.log)); no report.json left"

jid=$(sbatch --parsable --array=2 grade-array-4.sh)
mid=$(sbatch --parsable --dependency=afterany:${jid} merge.sh)
wait_job "$mid"
cmp grade/report.json single.json
echo "ok: rerun of shard 2 alone, then merge: report byte-identical to a single run"
