#!/usr/bin/env bash
# `cmake --install` into a scratch DESTDIR with the Debian package's prefix (/usr), then the
# installed toysim, run from an empty folder with TOYSIM_EXERCISES unset: --version names a real
# commit, its trace of Problem 1 is the built toysim's, and `grade` and `exercise` use the
# exercises installed beside it (an exercise added there shows up; a missing one is looked for
# there).
#   installed.sh TOYSIM BUILD_DIR SOURCE_DIR VERSION
set -euo pipefail
source "$(dirname "$0")/common.sh"
toysim=$1 build=$2 source_dir=$3 version=$4
export LC_ALL=C.UTF-8

DESTDIR="$scratch/root" cmake --install "$build" --prefix /usr >"$scratch/install.log" 2>&1 ||
  { cat "$scratch/install.log"; fail "cmake --install failed"; }
prefix=$scratch/root/usr
installed=$prefix/bin/toysim
for file in bin/toysim share/man/man1/toysim.1.gz share/man/man1/toysim-trace.1.gz share/bash-completion/completions/toysim \
            share/doc/toysim/copyright share/toysim/programs/p1_c00.toy \
            share/toysim/programs/exercises/p1_c00/exercise.toy share/toysim/programs/exercises/p1_c00/starter.toy; do
  [[ -f $prefix/$file ]] || fail "cmake --install put no $file under the prefix"
done
[[ -x $installed ]] || fail "the installed toysim is not executable"
# Every file of programs/ (the exercises' hidden tests are in their exercise.toy), none left out.
diff <(cd "$source_dir/programs" && find . -type f | sort) <(cd "$prefix/share/toysim/programs" && find . -type f | sort) ||
  fail "share/toysim/programs does not hold exactly the files of programs/"

# bash-completion's loader finds the completion where it was installed (it looks under each of
# XDG_DATA_DIRS, as under /usr/share for the package).
if [[ -f /usr/share/bash-completion/bash_completion ]]; then
  loaded=$(XDG_DATA_DIRS=$prefix/share bash --norc --noprofile -c \
    'source /usr/share/bash-completion/bash_completion; _completion_loader toysim; complete -p toysim' 2>&1) || true
  [[ $loaded == "complete -F _toysim toysim" ]] || fail "bash-completion does not load the installed completion: $loaded"
else
  echo "(no bash-completion package: its loader not tried)"
fi

mkdir "$scratch/work"
cd "$scratch/work"  # no programs/exercises here
unset TOYSIM_EXERCISES

# --version: "toysim VERSION (commit C)", the same as the built toysim's, C a commit of this
# repository (or "unknown" outside one).
said=$("$installed" --version)
[[ $said =~ ^toysim\ ${version//./\\.}\ \(commit\ ([^\ \)]+)\)$ ]] || fail "--version says '$said', not 'toysim $version (commit ...)'"
commit=${BASH_REMATCH[1]}
[[ $said == "$("$toysim" --version)" ]] || fail "the installed --version ($said) is not the built one's"
if [[ $commit != unknown ]] && command -v git >/dev/null && git -C "$source_dir" rev-parse --git-dir >/dev/null 2>&1; then
  git -C "$source_dir" rev-parse --verify --quiet "${commit%-dirty}^{commit}" >/dev/null ||
    fail "--version names commit '$commit', which this repository does not have"
fi
echo "--version: $said"

# The trace of Problem 1 from the installed program: the built toysim's, and the README's rows.
expected=$("$toysim" trace "$source_dir/programs/p1_c00.toy")
traced=$("$installed" trace "$prefix/share/toysim/programs/p1_c00.toy") || fail "the installed toysim's trace failed"
[[ $traced == "$expected" ]] || { diff <(echo "$expected") <(echo "$traced") || true; fail "the installed trace differs from the built toysim's"; }
for line in '   1  LOAD a[0][0], R0    a00' '   6  MAC R0, R1, R2, R2  a01  b10  c00' 'c00 = a00·b00 + a01·b10' \
            '7 cycles, 7 instructions (4 LOAD, 1 STORE, 1 MAC_Z, 1 MAC); DRAM: 4 reads, 1 write; 3 registers used'; do
  sed 's/ *$//' <<<"$traced" | grep -qxF -- "$line" || fail "the trace has no line '$line'"
done

# The exercises: found in the installed share folder, with no ./programs/exercises and no
# TOYSIM_EXERCISES. The build's own source folder is on this machine too, so an exercise added to
# the installed folder only is what shows which folder toysim reads.
exercises=$prefix/share/toysim/programs/exercises
"$installed" exercise list >list.txt || { cat list.txt; fail "exercise list failed"; }
grep -qw p1_c00 list.txt || fail "exercise list does not list p1_c00"
cp -r "$exercises/p1_c00" "$exercises/zz_installed_probe"
"$installed" exercise list | grep -q zz_installed_probe || fail "exercise list does not read the installed exercises ($exercises)"
if "$installed" grade no_such_exercise x.toy >out.txt 2>&1; then fail "grade of a missing exercise succeeded"; fi
grep -qF "$exercises" out.txt || { cat out.txt; fail "a missing exercise is not looked for in $exercises"; }

"$installed" grade p1_c00 "$exercises/p1_c00/solution.toy" >grade.txt || { cat grade.txt; fail "the reference solution of p1_c00 does not score full marks"; }
"$installed" exercise start zz_installed_probe mine >/dev/null || fail "exercise start failed"
[[ -f mine/zz_installed_probe.toy ]] || fail "exercise start wrote no mine/zz_installed_probe.toy"
status=0
"$installed" grade zz_installed_probe mine/zz_installed_probe.toy >/dev/null || status=$?
((status == 0 || status == 1)) || fail "grading the starter file exited $status (0 or 1 expected: graded)"

# The installed Python module (where this build has one: TOYSIM_PYTHON names its python) grades
# an exercise by name from the installed share folder too, not from this build's source tree.
if [[ -n ${TOYSIM_PYTHON:-} ]]; then
  module_dir=$prefix/$TOYSIM_PYTHON_DIR
  [[ -f $module_dir/toysim/__init__.py ]] || fail "cmake --install put no Python module in $module_dir/toysim"
  # A sanitized module loads only with the sanitizers' runtime preloaded (python/CMakeLists.txt).
  graded=$(LD_PRELOAD=${TOYSIM_PYTHON_PRELOAD:-} ASAN_OPTIONS=detect_leaks=0 PYTHONPATH=$module_dir "$TOYSIM_PYTHON" -c '
import sys, toysim
assert toysim.__file__.startswith(sys.argv[1]), toysim.__file__
g = toysim.grade("zz_installed_probe", sys.argv[2])
print(g.score, g.max_score)' "$module_dir" "$exercises/p1_c00/solution.toy" 2>&1) ||
    fail "the installed Python module did not grade zz_installed_probe: $graded"
  read -r points max_points <<<"$graded"
  [[ $points == "$max_points" && $points != 0 ]] || fail "the installed module graded p1_c00's solution $graded, not full marks"
  echo "python: the installed module graded zz_installed_probe $graded"
fi
echo "ok: installed under $prefix, exercises from $exercises"
