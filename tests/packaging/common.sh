# Shared by the packaging tests (sourced): how a test fails, and how it skips (exit 77, which
# tests/packaging/CMakeLists.txt tells ctest is "skipped") when a tool it needs is missing.
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

skip() {
  echo "skipped: $*"
  exit 77
}

# need TOOL PACKAGE: skip unless TOOL is on PATH (PACKAGE: the Debian package that has it).
need() {
  command -v "$1" >/dev/null 2>&1 || skip "no $1 on PATH (Debian package $2)"
}

# A scratch folder, removed when the test ends however it ends.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# /proc/self/exe, and so the paths toysim prints, have symlinks resolved.
scratch=$(realpath "$scratch")
