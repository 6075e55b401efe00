#!/usr/bin/env bash
# `toysim step` in a real terminal, driven through tmux as a person would type: the prompt,
# Enter repeating the last command, libedit's history (Up) and line editing (Ctrl-A, Ctrl-F),
# the changed register in color, and Ctrl-C interrupting a long move.
# Usage: step_in_terminal.sh path/to/toysim
# Exits 77 (ctest: skipped) only when tmux is missing; scripts/install-deps.sh installs it.
set -euo pipefail
toysim=$(realpath "$1")
if ! command -v tmux >/dev/null; then
  echo "skipped: tmux is not installed (scripts/install-deps.sh installs it)"
  exit 77
fi
socket="toysim-step-test-$$"
tmux_() { tmux -L "$socket" "$@"; }
trap 'tmux_ kill-server 2>/dev/null || true' EXIT
# Starts the session $1 running the shell command $2. A tmux server that is starting (or
# exiting, its last session gone) can drop the client ("server exited unexpectedly", a known
# tmux race that failed CI once), so a failed start is retried on a fresh server.
start_session() {
  for attempt in 1 2 3 4 5; do
    if tmux_ -f /dev/null new-session -d -s "$1" -x 150 -y 60 -e TERM=xterm-256color "$2"; then
      tmux_ set-option -g exit-empty off >/dev/null 2>&1 || true
      return 0
    fi
    echo "tmux did not start the session (attempt $attempt), retrying"
    tmux_ kill-server 2>/dev/null || true
    sleep 0.5
  done
  echo "FAILED: tmux could not start a session"
  exit 1
}
session=first
start_session "$session" \
  "cd '$PWD' && '$toysim' step programs/p5_online_softmax.toy --set n=10; echo \"exit status \$?\"; sleep 60"

screen() { tmux_ capture-pane -t "$session" -p -J -S -200 "$@"; }
# Waits until the pane shows $1 (a fixed string), failing after 20 s with what it shows.
wait_for() {
  for _ in $(seq 200); do
    if screen | grep -qF -- "$1"; then return 0; fi
    sleep 0.1
  done
  echo "FAILED: the terminal never showed: $1"
  echo "---- it shows:"
  screen
  exit 1
}
keys() { tmux_ send-keys -t "$session" "$@"; }
type_line() { keys -l -- "$1"; keys Enter; }

wait_for "(toysim) "
type_line "step 18"
wait_for "step 18, cycle 18"
keys Enter                      # Enter repeats: step 36
wait_for "step 36, cycle 36"
keys Up Enter                   # history: "step 18" again: step 54
wait_for "step 54, cycle 54"
keys -l -- "bck 2"              # a typo, mended in place: Ctrl-A, Ctrl-F, "a"
keys C-a C-f
keys -l -- "a"
keys Enter
wait_for "step 52, cycle 52"
# The register the step changed is green (bold), as on any color terminal.
if ! screen -e | grep -qF $'\e[32m'; then
  echo "FAILED: no changed cell in color"
  screen -e | tail -20 | cat -v
  exit 1
fi
type_line "quit"
wait_for "exit status 0"

# Ctrl-C stops a long move, not the session: a 400-million-step matmul scanned for a
# breakpoint it never reaches is interrupted, and the session goes on from where it stopped.
tmux_ kill-session -t "$session"
session=second
start_session "$session" \
  "cd '$PWD' && '$toysim' step programs/matmul_inner.toy --set n=512; echo \"exit status \$?\"; sleep 60"
wait_for "(toysim) "
type_line "break cycle 999999999999"
type_line "continue"
sleep 1
keys C-c
wait_for "interrupted"
type_line "print reads(b)"
wait_for "reads(b) = "
type_line "quit"
wait_for "exit status 0"
echo "ok: prompt, Enter repeats, history, line editing, color and Ctrl-C in a terminal"
