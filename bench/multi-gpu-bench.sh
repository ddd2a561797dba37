#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# On a host with two GPUs or more, in one run: one cudamlp on GPU 0 and
# spread over GPUs 0 and 1, then S streams (one cudamlp each) on GPU 0 and
# over both; prints each table and the 2-GPU / 1-GPU ratio of the best
# frames/s per workload (docs/PERFORMANCE.md, "Several GPUs, several streams, other hosts").
# Every step runs whatever an earlier one did; the end names each step
# that failed, and the exit status is 1 if one did.
#
#   bench/multi-gpu-bench.sh [OUT_DIR]
#   WORKLOADS=seed,hd REPEATS=3 STREAMS=4 BACKEND=cuda (cpu: the same steps on the CPU backend)
set -uo pipefail
out=${1:-.}
bench=${BUILD:-build}/bench/pingpong-bench
common=(--workloads "${WORKLOADS:-seed,hd}" --repeats "${REPEATS:-3}" --backend "${BACKEND:-cuda}")
[ -n "${FRAMES:-}" ] && common+=(--frames "$FRAMES" --warmup 16)
streams=${STREAMS:-4}
mkdir -p "$out" || exit 1
failed=()

run() { # name, pingpong-bench arguments...
  local name=$1
  shift
  echo "== pingpong-bench ${common[*]} $*"
  "$bench" "${common[@]}" "$@" > "$out/$name.md" 2> "$out/$name.log"
  local rc=$?
  main_table "$name" | cut -d'|' -f2-7
  if [ $rc -ne 0 ] || ! main_table "$name" | grep -q . || grep -q '| failed |' "$out/$name.md"; then
    failed+=("$name (exit $rc; $out/$name.log)")
    tail -n 5 "$out/$name.log"
  fi
}

# The rows of the first table (the second holds the element's own stats).
main_table() {
  sed '/^# Inside/,$d' "$out/$1.md" | grep -E '^\| [a-z-]+ \| [0-9]+ \| [0-9]' || true
}

# The best frames/s of each workload in a table: "workload fps" lines.
best() {
  main_table "$1" | awk -F'|' '{ w = $2; gsub(/ /, "", w); f = $4 + 0;
    if (f > best[w]) best[w] = f } END { for (w in best) print w, best[w] }' | sort
}

ratios() { # one-device table, two-device table, label
  join <(best "$1") <(best "$2") |
    awk -v label="$3" '{ printf "%s %s: %.0f -> %.0f frames/s, x%.2f\n", label, $1, $2, $3, $3 / $2 }'
}

run one-gpu --devices 0 --slots 2,3,4
run two-gpus --devices 0,1 --slots 4,6,8
run streams-one-gpu --devices 0 --streams "$streams" --slots 2,3,4
run streams-two-gpus --devices 0,1 --streams "$streams" --slots 2,3,4
echo "== 2 GPUs against 1 (best slot count each)"
ratios one-gpu two-gpus "one stream"
ratios streams-one-gpu streams-two-gpus "$streams streams"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'failed: %s\n' "${failed[@]}"
  exit 1
fi
