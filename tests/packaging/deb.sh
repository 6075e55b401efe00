#!/usr/bin/env bash
# The Debian package: `cpack -G DEB` (into a scratch folder, not the build folder) makes
# toysim_VERSION_ARCH.deb; dpkg-deb shows the executable, the man pages, the completion, the
# programs and exercises, owned by root, and Depends on the libraries toysim links; unpacked into
# a scratch root (dpkg -x: nothing installed on this machine), its toysim traces Problem 1 and
# finds its exercises, and man renders its page.
#   deb.sh TOYSIM BUILD_DIR VERSION
set -euo pipefail
source "$(dirname "$0")/common.sh"
toysim=$1 build=$2 version=$3
export LC_ALL=C.UTF-8
need dpkg-deb dpkg
need dpkg-shlibdeps dpkg-dev  # CPACK_DEBIAN_PACKAGE_SHLIBDEPS: the Depends line
need readelf binutils

cpack -G DEB -B "$scratch/out" --config "$build/CPackConfig.cmake" >"$scratch/cpack.log" 2>&1 ||
  { cat "$scratch/cpack.log"; fail "cpack -G DEB failed"; }
deb=$scratch/out/toysim_${version}_$(dpkg --print-architecture).deb
[[ -f $deb ]] || { ls "$scratch/out"; fail "cpack made no $(basename "$deb")"; }

contents=$(dpkg-deb -c "$deb")
for file in ./usr/bin/toysim ./usr/share/man/man1/toysim.1.gz ./usr/share/man/man1/toysim-trace.1.gz ./usr/share/man/man1/toysim-gpu.1.gz \
            ./usr/share/bash-completion/completions/toysim ./usr/share/doc/toysim/copyright \
            ./usr/share/toysim/programs/p1_c00.toy ./usr/share/toysim/programs/attention/fa2.toy \
            ./usr/share/toysim/programs/exercises/p1_c00/exercise.toy ./usr/share/toysim/programs/exercises/p1_c00/starter.toy; do
  grep -qE " ${file//./\\.}$" <<<"$contents" || fail "the package has no $file"
done
grep -vq ' root/root ' <<<"$contents" && fail "files in the package not owned by root/root: $(grep -v ' root/root ' <<<"$contents" | head -3)"

info=$(dpkg-deb -I "$deb")
field() { dpkg-deb -f "$deb" "$1"; }
[[ $(field Package) == toysim ]] || fail "Package: $(field Package)"
[[ $(field Version) == "$version" ]] || fail "Version: $(field Version), not $version"
[[ $(field Section) == education ]] || fail "Section: $(field Section)"
[[ $(field Maintainer) =~ ^[^\<]+\ \<[^\>]+@[^\>]+\>$ ]] || fail "Maintainer is not 'Name <address>': $(field Maintainer)"
[[ -n $(field Description) ]] || fail "no Description"
depends=$(field Depends)
# The package names in Depends, one a line, without versions or alternatives' bars.
depended=$(sed 's/([^)]*)//g; s/|/,/g' <<<"$depends" | tr ',' '\n' | sed 's/^ *//; s/ *$//')
# Every shared library toysim links is some package's, and that package is a dependency: libc6,
# libstdc++6, libfmt9, libedit2 (when the build found libedit) ...
for library in $(readelf -d "$toysim" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
  [[ $library == ld-linux* ]] && continue
  # This architecture's copy (libc6's libm.so.6, not libc6-i386's).
  package=$(dpkg -S "*/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/$library" 2>/dev/null | head -1 | cut -d: -f1) || true
  [[ -z $package ]] && continue  # not from a Debian package (a local build of a library)
  grep -qxF -- "$package" <<<"$depended" || fail "toysim links $library ($package), but Depends is: $depends"
done
# The Python module, when the build has one, comes with the Python and the NumPy it needs.
if grep -q '/dist-packages/toysim/_toysim' <<<"$contents"; then
  for package in python3 python3-numpy; do
    grep -qxF -- "$package" <<<"$depended" || fail "the package holds the Python module, but Depends has no $package: $depends"
  done
fi
echo "Depends: $depends"

# Unpacked into a scratch root: the same toysim, and it finds its own programs and exercises.
dpkg-deb -x "$deb" "$scratch/root"
unpacked=$scratch/root/usr/bin/toysim
mkdir "$scratch/work"
cd "$scratch/work"
unset TOYSIM_EXERCISES
[[ $("$unpacked" --version) == "$("$toysim" --version)" ]] || fail "the package's toysim --version differs from the build's"
[[ $("$unpacked" trace "$scratch/root/usr/share/toysim/programs/p1_c00.toy") == "$("$toysim" trace "$scratch/root/usr/share/toysim/programs/p1_c00.toy")" ]] ||
  fail "the package's toysim traces Problem 1 differently"
"$unpacked" trace "$scratch/root/usr/share/toysim/programs/p1_c00.toy" | grep -q '^c00 = a00·b00 + a01·b10$' || fail "no c00 line in the trace"
if "$unpacked" grade no_such_exercise x.toy >out.txt 2>&1; then fail "grade of a missing exercise succeeded"; fi
grep -qF "$scratch/root/usr/share/toysim/programs/exercises" out.txt || { cat out.txt; fail "the package's toysim does not look in its own exercises"; }
if command -v man >/dev/null; then
  MANWIDTH=80 man -l "$scratch/root/usr/share/man/man1/toysim.1.gz" 2>&1 | grep -q '^NAME' || fail "man does not render the package's toysim.1.gz"
fi
echo "ok: $(basename "$deb"), $(grep -c . <<<"$contents") entries; $(grep -E '^ *Installed-Size' <<<"$info" | tr -s ' ')"
