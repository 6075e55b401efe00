#!/usr/bin/env bash
# Generated CUDA under compute-sanitizer: racecheck (shared-memory hazards between the block's
# threads) and memcheck (out-of-bounds and misaligned accesses) must both report 0 errors for
# every shipped attention program (and schedule) at n = 1, 7, 333 and 1000: tiny shapes, and ragged ones whose
# last tile is partial, where the generator's barriers and edge loops are tested. Each at d = 64
# with 64-row tiles, and 128-row tiles as well where a program has them (the tensor cores'
# fragments in registers), in fp32, fp16 and bf16, the half types with and without tensor cores.
#
# A run fails when the sanitizer reports an error or the run ends in anything but a verdict
# (exit 0, or 1 for outputs outside the dtype's tolerance: that is listed, not failed here:
# tests/gpu/generated.sh holds the outputs to their checks). The counting variant of each
# kernel (suffix _count) is the timed one plus counters, and is left unchecked to save time.
# A setting the program refuses on the CPU (`toysim run` exits 2) is skipped and listed.
# Runs JOBS (default: the cores) sanitizer processes at a time on the one GPU; racecheck of the
# backward programs at n = 1000 takes the longest (minutes each).
# Usage: generated_sanitized.sh path/to/toysim [REGEX]   (REGEX: the program paths to run)
# VARIANTS="fp16,bf16 --no-tensor-cores" runs those dtype variants only (default: the five above).
# DONE=FILE resumes a sweep cut short: FILE holds the ok lines of an earlier run's output, and
# the runs they name are not run again (the whole sweep takes over half an hour on one GPU).
# Exits 77 (ctest: skipped) without a GPU, NVRTC or compute-sanitizer.
set -uo pipefail
toysim=$(realpath "$1")
filter=${2:-}
cd "$(dirname "$0")/../.."
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ ! -x "$sanitizer" ]; then
  echo "skipped: no compute-sanitizer"
  exit 77
fi
probe=$("$toysim" gpu run programs/p1_c00.toy --kernel generated --repeats 1 --warmups 0 2>&1)
if [ $? -ne 0 ]; then
  echo "skipped: $(echo "$probe" | grep -m1 error)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# "--set n=333 --set d=64 ..." for FILE at N with R-row tiles: only the parameters it has.
settings() {  # FILE N R
  local file=$1 n=$2 rows=$3 sets="--set n=$2"
  grep -qE '^param d\b' "$file" && sets+=" --set d=64"
  grep -qE '^param Br\b' "$file" && sets+=" --set Br=$rows"
  grep -qE '^param Bc\b' "$file" && sets+=" --set Bc=64"
  grep -qE '^param B\b' "$file" && sets+=" --set B=$rows"
  echo "$sets"
}

jobs_file=$work/jobs
skipped=0
for file in programs/attention/*.toy programs/attention/schedules/*.toy; do
  [[ -n $filter && ! $file =~ $filter ]] && continue
  grep -qE '^param n\b' "$file" || continue
  row_choices=(64)
  grep -qE '^param (Br|B)\b' "$file" && row_choices+=(128)
  for rows in "${row_choices[@]}"; do
    for n in 1 7 333 1000; do
      sets=$(settings "$file" "$n" "$rows")
      # shellcheck disable=SC2086
      if ! why=$("$toysim" run "$file" $sets --format json 2>&1 >/dev/null) && [[ $why == *error:* ]]; then
        echo "skip $file $sets: $(echo "$why" | grep -m1 error: | sed 's/^.*error: //')"
        skipped=$((skipped + 1))
        continue
      fi
      while read -r variant; do
        for tool in racecheck memcheck; do
          echo "$tool $file --dtype $variant $sets" >>"$jobs_file"
        done
      done < <(if [ -n "${VARIANTS:-}" ]; then tr ',' '\n' <<<"$VARIANTS"; else printf '%s\n' fp32 fp16 bf16 "fp16 --no-tensor-cores" "bf16 --no-tensor-cores"; fi)
    done
  done
done

# One job: the sanitizer's verdict and the run's exit into a log of its own, and a line as soon
# as it ends: "ok SECONDS TOOL FILE ARGS" or "FAIL ...".
run_job() {  # TOOL FILE ARGS...
  local tool=$1 file=$2; shift 2
  local log start=$SECONDS status
  log=$(mktemp "$work/run.XXXXXX")
  echo "$tool $file $*" >"$log"
  "$sanitizer" --tool "$tool" --error-exitcode 99 --print-limit 20 --kernel-name-exclude kns=_count \
    "$toysim" gpu run "$file" --kernel generated --heads 1 --repeats 1 --warmups 0 "$@" >>"$log" 2>&1
  status=$?
  # No summary: the sanitizer itself refused (an option it does not know, say), and checked nothing.
  grep -qE '(ERROR|RACECHECK) SUMMARY' "$log" || status=98
  echo "exit $status" >>"$log"
  case $status in
    0) echo "ok $((SECONDS - start))s $tool $file $*" ;;
    1) echo "ok $((SECONDS - start))s $tool $file $* (outside the dtype's tolerance: $(grep -m1 -o 'FAILED: [^,]*, first [^:]*' "$log"))" ;;
    *)
      echo "FAIL $((SECONDS - start))s $tool $file $*"
      grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Error|error:|Race|at .*:[0-9]+|^exit' "$log" | head -24 | sed 's/^/    /'
      ;;
  esac
}
export -f run_job
export sanitizer toysim work
jobs=${JOBS:-$(nproc)}
echo "$(wc -l <"$jobs_file") runs, $jobs at a time"
# The small shapes first: a run cut short by its time limit has checked the most settings.
awk '{ match($0, /--set n=[0-9]+/); print substr($0, RSTART + 8, RLENGTH - 8) "\t" $0 }' "$jobs_file" | sort -s -n -k1,1 | cut -f2- >"$jobs_file.sorted"
mv "$jobs_file.sorted" "$jobs_file"
if [ -n "${DONE:-}" ]; then
  sed -E '/^ok [0-9]+s /!d; s/^ok [0-9]+s //; s/ \(outside the dtype.*$//' "$DONE" | grep -vxFf - "$jobs_file" >"$jobs_file.left"
  echo "$(($(wc -l <"$jobs_file") - $(wc -l <"$jobs_file.left"))) runs done before ($DONE)"
  mv "$jobs_file.left" "$jobs_file"
fi
# shellcheck disable=SC2016
xargs -P "$jobs" -L 1 bash -c 'run_job "$@"' _ <"$jobs_file"

runs=0 failed=0
for log in "$work"/run.*; do
  runs=$((runs + 1))
  grep -qE '^exit [01]$' "$log" || failed=$((failed + 1))
done
echo "generated CUDA under compute-sanitizer: $runs runs (racecheck and memcheck), $failed failed, $skipped settings skipped"
echo "$((runs - failed)) passed, $failed failed"
[ "$runs" -gt 0 ] && [ "$failed" -eq 0 ]
