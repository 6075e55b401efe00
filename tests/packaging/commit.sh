#!/usr/bin/env bash
# cmake/commit.cmake, the commit `toysim --version` names: "unknown" for sources outside git (a
# tarball) and for sources unpacked inside some other repository; `git describe --always --dirty`
# of a checkout, "-dirty" once a tracked file changes; and the file rewritten only when its text
# changes (so a build of the same commit recompiles nothing).
#   commit.sh SOURCE_DIR
set -euo pipefail
source "$(dirname "$0")/common.sh"
source_dir=$1
script=$source_dir/cmake/commit.cmake

# commit_of DIR [GIT]: the kCommit that commit.cmake writes for sources in DIR.
commit_of() {
  cmake -D SOURCE_DIR="$1" -D OUT="$scratch/commit.cpp" -D GIT_EXECUTABLE="${2-}" -P "$script" || fail "commit.cmake failed for $1"
  sed -n 's/^const char\* const kCommit = "\(.*\)";$/\1/p' "$scratch/commit.cpp"
}

mkdir "$scratch/tarball"
[[ $(commit_of "$scratch/tarball") == unknown ]] || fail "no git executable: not 'unknown'"
need git git
git=$(command -v git)
[[ $(commit_of "$scratch/tarball" "$git") == unknown ]] || fail "sources outside git: not 'unknown'"

export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=test GIT_AUTHOR_EMAIL=test@example.org GIT_COMMITTER_NAME=test GIT_COMMITTER_EMAIL=test@example.org
export HOME=$scratch
repo=$scratch/repo
git init -q "$repo"
echo one >"$repo/file"
git -C "$repo" add file
git -C "$repo" commit -q -m one
mkdir "$repo/unpacked"
[[ $(commit_of "$repo/unpacked" "$git") == unknown ]] || fail "sources unpacked inside another repository: not 'unknown'"

head=$(git -C "$repo" rev-parse --short HEAD)
[[ $(commit_of "$repo" "$git") == "$head" ]] || fail "a clean checkout: '$(commit_of "$repo" "$git")', not '$head'"
touch -d '2000-01-01' "$scratch/commit.cpp"
commit_of "$repo" "$git" >/dev/null
[[ $(stat -c %Y "$scratch/commit.cpp") == $(date -d '2000-01-01' +%s) ]] || fail "the same commit rewrote the file (everything that includes it would rebuild)"
echo two >"$repo/file"
[[ $(commit_of "$repo" "$git") == "$head-dirty" ]] || fail "a changed tracked file: not '$head-dirty'"
echo "ok: unknown, unknown, $head, $head-dirty"
