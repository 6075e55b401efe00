#!/usr/bin/env bash
# The generated bash completion: it parses (bash -n), and sourced into a bash with COMP_WORDS and
# COMP_CWORD set as bash sets them, completes commands, options, option values, .toy files and
# exercise names; once on its own and once after the bash-completion package's own script, when
# that is installed.
#   completion.sh TOYSIM COMPLETION_SCRIPT
set -euo pipefail
source "$(dirname "$0")/common.sh"
toysim=$1 script=$2
export LC_ALL=C.UTF-8

bash -n "$script" || fail "bash -n rejects $script"

# Files to complete: .toy programs, something else, a folder.
cd "$scratch"
touch p1.toy p2.toy notes.txt
mkdir sub

# completions PRELUDE WORD...: what the completion offers for the last WORD (sorted, one a line).
completions() {
  local prelude=$1
  shift
  bash --norc --noprofile -c '
    prelude=$1 script=$2
    shift 2
    [[ -n $prelude ]] && source "$prelude"
    source "$script"
    COMP_WORDS=("$@")
    COMP_CWORD=$(($# - 1))
    COMP_LINE="$*" COMP_POINT=${#COMP_LINE}
    _toysim
    printf "%s\n" "${COMPREPLY[@]}"' _ "$prelude" "$script" "$@" | sort
}

# expect PRELUDE "WORDS" EXPECTED: the completion of WORDS (split at spaces; "" for the empty word
# being completed) is exactly EXPECTED (space-separated).
expect() {
  local prelude=$1 words=$2 expected=$3 got
  local -a argv
  read -r -a argv <<<"$words"
  [[ $words == *" " ]] && argv+=("")
  got=$(completions "$prelude" "${argv[@]}" | tr '\n' ' ' | sed 's/ $//')
  [[ $got == "$expected" ]] || fail "completing '$words'${prelude:+ (with $prelude)}: got '$got', expected '$expected'"
}

commands=$("$toysim" --help | awk '$0 == "Subcommands:" { inside = 1; next } inside && /^$/ { exit } inside { print $1 }' | sort | tr '\n' ' ' | sed 's/ $//')
run_options=$("$toysim" run --help | awk '$0 == "Options:" { inside = 1; next } inside && /^$/ { exit } inside && /^  [^ ]/ { print $1 }' | tr ',' '\n' | grep -- '^--' | sort | tr '\n' ' ' | sed 's/ $//')

preludes=("")
for candidate in /usr/share/bash-completion/bash_completion /etc/bash_completion; do
  if [[ -f $candidate ]]; then
    preludes+=("$candidate")
    break
  fi
done
for prelude in "${preludes[@]}"; do
  expect "$prelude" "toysim tr" "trace"
  expect "$prelude" "toysim run --se" "--set"
  expect "$prelude" "toysim " "$commands"
  expect "$prelude" "toysim run --" "$run_options"
  expect "$prelude" "toysim gpu " "cuda kernels run"
  expect "$prelude" "toysim gpu run --ke" "--kernel"
  expect "$prelude" "toysim exercise l" "list"
  expect "$prelude" "toysim trace p1.toy --format " "csv json markdown table"
  expect "$prelude" "toysim trace --values n" "numeric"
  expect "$prelude" "toysim trace --format = j" "json"       # bash splits --format=j at '='
  expect "$prelude" "toysim trace --format=j" "--format=json"  # when '=' is not a word break
  expect "$prelude" "toysim trace " "p1.toy p2.toy sub"       # .toy files and folders only
  expect "$prelude" "toysim run --set n=4 --stats p" "p1.toy p2.toy"
  expect "$prelude" "toysim run p1.toy " ""                  # one program, already given
  expect "$prelude" "toysim compare p1.toy p" "p1.toy p2.toy" # any number of programs
  expect "$prelude" "toysim view p1.toy -o " "notes.txt p1.toy p2.toy sub"
  expect "$prelude" "toysim exercise start p1_c00 " "sub"    # the folder to work in
  expect "$prelude" "$toysim grade p1_c" "p1_c00"            # exercise names, from `exercise list`
  expect "$prelude" "$toysim grade p1_c00 " "p1.toy p2.toy sub"
  echo "ok: completion${prelude:+ after $prelude}"
done
