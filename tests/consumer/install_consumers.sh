#!/usr/bin/env bash
# Installs this build into a scratch DESTDIR (meson install --destdir) and
# uses it as a user would:
#   - the installed headers are the public ones, and those of detail/ that
#     their inline code includes: nothing internal (the syscall table that
#     tests swap, the worker's protocol) ships, and sluice.h includes every
#     public header but asio/, kafka/, tls/ and zlib/;
#   - the installed tools start (their RUNPATH finds the installed library),
#     and the library's SONAME carries its ABI version;
#   - a program built with pkg-config (no -std flag of its own: sluice.pc
#     must bring -std=c++20) links and runs;
#   - a CMake project with find_package(sluice 0.1 REQUIRED) and
#     target_link_libraries(app sluice::sluice) configures, links and runs;
#   - one with COMPONENTS tls kafka (those built) and sluice::tls,
#     sluice::kafka links and runs; a component not there fails REQUIRED and
#     is not found under OPTIONAL_COMPONENTS.
#
#   install_consumers.sh MESON BUILD_DIR PREFIX LIBDIR BINDIR SOURCE_DIR SANITIZE
#
# Exit 77 (skipped) in a sanitizer build: its library needs the sanitizer
# runtime, which a plain consumer's link does not bring.
set -euo pipefail

meson=$1 build=$2 prefix=$3 libdir=$4 bindir=$5 here=$6 sanitize=$7
if [[ $sanitize != none ]]; then
  echo "install_consumers.sh: skipped in a -Db_sanitize=$sanitize build"
  exit 77
fi
for tool in cmake pkg-config readelf; do
  command -v "$tool" >/dev/null || { echo "install_consumers.sh: skipped: no $tool (apt-get install cmake pkg-config binutils)"; exit 77; }
done

# meson test points LD_LIBRARY_PATH at the build's library: everything below
# must find the installed one instead.
unset LD_LIBRARY_PATH

tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT
dest=$tmp/dest
[[ $libdir == /* ]] || libdir=$prefix/$libdir
[[ $bindir == /* ]] || bindir=$prefix/$bindir
root=$dest$prefix

"$meson" install -C "$build" --no-rebuild --quiet --destdir "$dest" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; exit 1; }

fail() { echo "FAIL: $*"; exit 1; }
expected=$'hello from sluice 42\nbye'

echo "== installed library and tools"
lib=$(find "$dest$libdir" -maxdepth 1 -name 'libsluice.so.*.*.*' | head -n 1)
[[ -n $lib ]] || fail "no versioned libsluice.so.X.Y.Z in $dest$libdir"
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ $soname =~ ^libsluice\.so\.[0-9]+$ ]] || fail "SONAME of $lib is '$soname', not libsluice.so.N"
[[ -e $dest$libdir/$soname ]] || fail "no $soname link beside $lib"
echo "SONAME $soname"
stray=$(find "$dest" -path '*/include/*' -type f ! -name '*.h' | head -n 3)
[[ -z $stray ]] || fail "installed under include/, not headers: $stray"

echo "== installed headers"
inc=$root/include
src=$here/../../lib
[[ -d $inc/sluice ]] || fail "no headers under $inc/sluice"
(cd "$inc" && find sluice -name '*.h' | sort) >"$tmp/installed"
# A component's internals: its detail/ folder, and the queue under the streams.
internal_re='^sluice/([a-z_]+/)*detail/|^sluice/queue/'
includes_of() { sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\(sluice\/[^"]*\)".*/\1/p' "$@"; }
# Never: the syscall table (a mutable global that tests swap), nor any other
# internal header, wherever it would be.
for h in syscalls.h worker_protocol.h destroy.h open_file.h unix_path.h; do
  hit=$(grep -E "(^|/)$h\$" "$tmp/installed" || true)
  [[ -z $hit ]] || fail "an internal header is installed: $hit"
done
# Everything an installed header includes is installed (or a consumer's
# compile fails), and an installed internal header is there only because an
# installed public header needs it, directly or through another.
while IFS= read -r h; do
  while IFS= read -r dep; do
    grep -qxF "$dep" "$tmp/installed" || fail "$h includes $dep, which is not installed"
  done < <(includes_of "$inc/$h")
done <"$tmp/installed"
grep -vE "$internal_re" "$tmp/installed" >"$tmp/needed.new"
: >"$tmp/needed"
while ! cmp -s "$tmp/needed" "$tmp/needed.new"; do
  cp "$tmp/needed.new" "$tmp/needed"
  { cat "$tmp/needed"; (cd "$inc" && includes_of $(cat "$tmp/needed")); } | sort -u >"$tmp/needed.new"
done
while IFS= read -r h; do
  grep -qxF "$h" "$tmp/needed" || fail "$h is installed, but no public header includes it: keep it out of the install (lib/meson.build)"
done < <(grep -E "$internal_re" "$tmp/installed")
# Every public header of the source tree ships (kafka/ only with the Kafka
# library, tls/ only with the TLS one, zlib/ only with the codecs it was
# built with), and sluice.h includes each but asio/, kafka/, tls/ and zlib/
# (which a build may lack).
pc_var() { PKG_CONFIG_PATH=$dest$libdir/pkgconfig pkg-config --variable="$1" sluice; }
kafka=$(pc_var kafka) tls=$(pc_var tls) zlib=$(pc_var zlib) zstd=$(pc_var zstd)
while IFS= read -r h; do
  [[ $h == sluice/kafka/* && $kafka != true ]] && continue
  [[ $h == sluice/tls/* && $tls != true ]] && continue
  [[ $h == sluice/syslog/syslog_tls.h && $tls != true ]] && continue
  [[ $h == sluice/zlib/gzip.h && $zlib != true ]] && continue
  [[ $h == sluice/zlib/zstd.h && $zstd != true ]] && continue
  [[ $h == sluice/zlib/zlib_* && $zlib != true && $zstd != true ]] && continue
  grep -qxF "$h" "$tmp/installed" || fail "$h is not installed: list it in lib/meson.build (sluice_public_h), or move it under its component's detail/"
done < <(cd "$src" && find sluice -name '*.h' | grep -vE "$internal_re" | sort)
while IFS= read -r h; do
  [[ $h =~ $internal_re ]] && continue
  case $h in sluice/asio/* | sluice/kafka/* | sluice/tls/* | sluice/syslog/syslog_tls.h | sluice/zlib/* | sluice/sluice.h | sluice/base/config.h) continue ;; esac
  includes_of "$inc/sluice/sluice.h" | grep -qxF "$h" || fail "sluice.h does not include $h"
done <"$tmp/installed"
echo "$(wc -l <"$tmp/installed") headers, $(grep -cE "$internal_re" "$tmp/installed") of them internals (detail/, queue/) for the public ones' inline code"

if [[ -d $dest$bindir ]]; then
  for tool in "$dest$bindir"/sluice-*; do
    # No LD_LIBRARY_PATH: the tool must find the library by its RUNPATH.
    "$tool" --help >"$tmp/help" 2>&1 || fail "$(basename "$tool") --help: $(head -n 3 "$tmp/help")"
    # grep reads all of ldd's output: with pipefail, grep -q could exit first and
    # fail the pipeline with ldd's SIGPIPE.
    ldd "$tool" | grep "libsluice.so.* => $dest" >/dev/null || fail "$(basename "$tool") does not load the installed library: $(ldd "$tool" | grep sluice)"
    echo "$(basename "$tool") starts"
  done
fi

echo "== a pkg-config consumer"
export PKG_CONFIG_PATH=$dest$libdir/pkgconfig
# Each package once in Requires (meson adds the library's own dependencies
# there: naming one again wrote it twice), and fmt, which the headers
# include, in the public Requires, not Requires.private.
requires=$(pkg-config --print-requires sluice)
echo "pkg-config --print-requires sluice: $(echo $requires)"
dups=$(awk '{print $1}' <<<"$requires" | sort | uniq -d)
[[ -z $dups ]] || fail "sluice.pc names $(echo $dups) more than once in Requires: $(grep '^Requires' "$PKG_CONFIG_PATH/sluice.pc")"
awk '{print $1}' <<<"$requires" | grep -x fmt >/dev/null || fail "sluice.pc does not require fmt"
[[ -n $(pkg-config --variable=boost sluice) ]] || fail "sluice.pc has no boost variable"
flags=$(pkg-config --define-variable=prefix="$root" --cflags --libs sluice)
echo "pkg-config --cflags --libs sluice: $flags"
# shellcheck disable=SC2086  # the flags are words
c++ -o "$tmp/app-pc" "$here/app.cc" $flags
out=$(LD_LIBRARY_PATH=$dest$libdir "$tmp/app-pc" 2>"$tmp/err")
[[ $out == "$expected" ]] || fail "pkg-config consumer printed '$out'"
[[ $(cat "$tmp/err") == "end: ok" ]] || fail "pkg-config consumer: $(cat "$tmp/err")"
echo "ok"

echo "== a CMake consumer"
cmake -S "$here" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$root" -DCMAKE_BUILD_TYPE=Release >"$tmp/cmake.log" 2>&1 ||
  { cat "$tmp/cmake.log"; fail "cmake could not configure the consumer"; }
cmake --build "$tmp/cmake" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "the CMake consumer did not build"; }
# CMake's build RUNPATH points into the DESTDIR tree, so no LD_LIBRARY_PATH.
out=$("$tmp/cmake/app" 2>"$tmp/err")
[[ $out == "$expected" ]] || fail "CMake consumer printed '$out'"
[[ $(cat "$tmp/err") == "end: ok" ]] || fail "CMake consumer: $(cat "$tmp/err")"
echo "ok"

echo "== CMake consumers of the components (find_package(sluice COMPONENTS tls kafka))"
# The components this build has: the installed libraries say.
want=() names=()
[[ -e $dest$libdir/libsluice-tls.so || -e $dest$libdir/libsluice-tls.a ]] && want+=(tls) && names+=(openssl)
[[ -e $dest$libdir/libsluice-kafka.so || -e $dest$libdir/libsluice-kafka.a ]] && want+=(kafka) && names+=(rdkafka)
list=$(IFS=';'; echo "${want[*]}")
cmake -S "$here/components" -B "$tmp/comp" -DCMAKE_PREFIX_PATH="$root" -DCMAKE_BUILD_TYPE=Release \
  -DWANT="$list" >"$tmp/comp.log" 2>&1 || { cat "$tmp/comp.log"; fail "cmake could not configure COMPONENTS $list"; }
cmake --build "$tmp/comp" >"$tmp/comp-build.log" 2>&1 || { cat "$tmp/comp-build.log"; fail "the components' consumer did not build"; }
for i in "${!want[@]}"; do
  # libsluice-NAME finds libsluice.so.0 by the system's paths (an installed
  # library has no RUNPATH; the program's does not serve its libraries'
  # needs), which the scratch DESTDIR is not on.
  out=$(LD_LIBRARY_PATH=$dest$libdir "$tmp/comp/${want[$i]}_app")
  [[ $out == "${names[$i]}" ]] || fail "the ${want[$i]} consumer printed '$out', not '${names[$i]}'"
done
echo "ok: COMPONENTS ${want[*]}: sluice::${want[*]} link and run"
# A component not there: REQUIRED fails to configure, naming it; OPTIONAL
# configures and leaves it not found.
for c in nosuch $([[ " ${want[*]} " == *" tls "* ]] || echo tls) $([[ " ${want[*]} " == *" kafka "* ]] || echo kafka); do
  if cmake -S "$here/components" -B "$tmp/comp-$c" -DCMAKE_PREFIX_PATH="$root" -DWANT="$c" >"$tmp/comp-$c.log" 2>&1; then
    fail "find_package(sluice REQUIRED COMPONENTS $c) did not fail"
  fi
  grep -q "$c" "$tmp/comp-$c.log" || { cat "$tmp/comp-$c.log"; fail "find_package(sluice COMPONENTS $c) failed without naming $c"; }
  rm -rf "$tmp/comp-$c"
  cmake -S "$here/components" -B "$tmp/comp-$c" -DCMAKE_PREFIX_PATH="$root" -DWANT="$c" -DMODE=optional \
    >"$tmp/comp-$c.log" 2>&1 || { cat "$tmp/comp-$c.log"; fail "find_package(sluice OPTIONAL_COMPONENTS $c) failed"; }
  grep -q "sluice_${c}_FOUND=FALSE" "$tmp/comp-$c.log" || { cat "$tmp/comp-$c.log"; fail "OPTIONAL_COMPONENTS $c: not said not found"; }
  echo "ok: COMPONENTS $c (not there): REQUIRED fails, OPTIONAL_COMPONENTS leaves sluice_${c}_FOUND false"
done
