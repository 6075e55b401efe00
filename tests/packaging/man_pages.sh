#!/usr/bin/env bash
# The generated man pages: one per command that `toysim --help` lists, each rendering with no
# groff warning (groff -ww, and man -l as a reader would see it at 80 columns, no line wider),
# with its NAME, SYNOPSIS, SEE ALSO and every option its command's --help (and its subcommands')
# lists.
#   man_pages.sh TOYSIM MAN_DIR
set -euo pipefail
source "$(dirname "$0")/common.sh"
toysim=$1 man_dir=$2
need groff groff-base
need man man-db
export LC_ALL=C.UTF-8 MANWIDTH=80 MAN_DISABLE_SECCOMP=1
unset MANPAGER PAGER

# The names in a help section ("Options:", "Subcommands:"): first word of each item, split at ','.
section_names() {
  awk -v section="$1" '$0 == section { inside = 1; next } inside && /^$/ { exit } inside && /^  [^ ]/ { print $1 }' | tr ',' '\n'
}

commands=$("$toysim" --help | section_names Subcommands:)
[[ -n $commands ]] || fail "toysim --help lists no commands"

# render PAGE: its text as man shows it; fails on any warning from groff or man.
render() {
  local page=$1 warnings
  warnings=$(groff -ww -man -Tutf8 -z "$page" 2>&1) || fail "groff failed on $page: $warnings"
  [[ -z $warnings ]] || fail "groff warns on $(basename "$page"):"$'\n'"$warnings"
  man --warnings -l "$page" >"$scratch/page.txt" 2>"$scratch/warnings.txt" || fail "man -l failed on $page: $(cat "$scratch/warnings.txt")"
  [[ ! -s $scratch/warnings.txt ]] || fail "man -l warns on $(basename "$page"):"$'\n'"$(cat "$scratch/warnings.txt")"
  local widest
  widest=$(wc -L <"$scratch/page.txt")
  ((widest <= 80)) || fail "$(basename "$page") has a line $widest columns wide at MANWIDTH=80: $(awk 'length > 80' "$scratch/page.txt" | head -1)"
  for heading in NAME SYNOPSIS DESCRIPTION OPTIONS 'SEE ALSO'; do
    grep -qx "$heading" "$scratch/page.txt" || fail "$(basename "$page") has no $heading section"
  done
  cat "$scratch/page.txt"
}

# has TEXT WORD...: every WORD appears in TEXT as a word of its own (not inside a longer option).
has() {
  local text=$1 word
  shift
  for word; do
    grep -qE -- "(^|[^-[:alnum:]])${word}([^-[:alnum:]]|$)" <<<"$text" || return 1
  done
}

top=$(render "$man_dir/toysim.1")
for command in $commands; do
  has "$top" "$command" "toysim-$command\\(1\\)" || fail "toysim(1) does not list the command $command with its page"
done
has "$top" --version --help || fail "toysim(1) does not list --version and --help"

for command in $commands; do
  page=$man_dir/toysim-$command.1
  [[ -f $page ]] || fail "no man page toysim-$command.1"
  text=$(render "$page")
  has "$text" "toysim\\(1\\)" || fail "toysim-$command(1)'s SEE ALSO does not name toysim(1)"
  options=$("$toysim" "$command" --help | section_names Options:)
  for sub in $("$toysim" "$command" --help | section_names Subcommands:); do
    has "$text" "toysim $command $sub" || fail "toysim-$command(1) has no section for 'toysim $command $sub'"
    options+=$'\n'$("$toysim" "$command" "$sub" --help | section_names Options:)
  done
  for option in $options; do
    has "$text" "$option" || fail "toysim-$command(1) does not list the option $option"
  done
  echo "toysim-$command.1: $(wc -w <<<"$options") options, no warnings"
done
# Nothing stale: exactly the commands' pages.
expected=$(printf 'toysim.1\n'; for command in $commands; do echo "toysim-$command.1"; done)
[[ $(cd "$man_dir" && ls ./*.1 | sed 's|^\./||' | sort) == "$(sort <<<"$expected")" ]] || fail "$man_dir holds pages of no command: $(ls "$man_dir")"
echo "ok: $(wc -w <<<"$commands") command pages and toysim.1"
