#!/usr/bin/env bash
# sluice as another meson project's subproject (dependency('sluice',
# fallback: ['sluice', 'sluice_dep'])): configured with its defaults, it
# brings the library only (no tools, tests or benchmarks, nothing in the
# outer project's meson test); with -Dsluice:tools=true it builds the tools.
#
#   subproject.sh MESON SLUICE_SOURCE_DIR CONSUMER_DIR
set -euo pipefail
meson=$1 sluice=$2 consumer=$3
tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The consumer's tree: its meson.build and app.cc, sluice under subprojects/.
mkdir -p "$tmp/src/subprojects" "$tmp/src/consumer"
cp "$consumer/meson.build" "$tmp/src/consumer/"
cp "$consumer/../app.cc" "$tmp/src"
sed -i "s|'../app.cc'|'app.cc'|" "$tmp/src/consumer/meson.build"
mv "$tmp/src/consumer/meson.build" "$tmp/src/meson.build"
ln -s "$sluice" "$tmp/src/subprojects/sluice"

targets() {  # the names of the build's targets, sorted, one a line
  "$meson" introspect --targets "$1" | python3 -c 'import json,sys; print("\n".join(sorted(t["name"] for t in json.load(sys.stdin))))'
}

"$meson" setup "$tmp/b" "$tmp/src" >"$tmp/setup.log" 2>&1 || { cat "$tmp/setup.log"; fail "meson setup"; }
got=$(targets "$tmp/b")
[[ $got == $'app\nsluice' ]] || fail "targets by default: $(echo $got), expected app and sluice"
tests=$("$meson" introspect --tests "$tmp/b")
[[ $tests == "[]" ]] || fail "the outer project's meson test has sluice's tests: $tests"
echo "default: targets app and sluice, no tests"

"$meson" configure "$tmp/b" -Dsluice:tools=true >"$tmp/conf.log" 2>&1 || { cat "$tmp/conf.log"; fail "meson configure"; }
"$meson" setup --reconfigure "$tmp/b" "$tmp/src" >"$tmp/setup.log" 2>&1 || { cat "$tmp/setup.log"; fail "reconfigure"; }
targets "$tmp/b" | grep -cx sluice-cat >/dev/null || fail "-Dsluice:tools=true did not bring the tools: $(targets "$tmp/b" | tr '\n' ' ')"
[[ $("$meson" introspect --tests "$tmp/b") == "[]" ]] || fail "-Dsluice:tools=true brought tests"
echo "-Dsluice:tools=true: the tools, still no tests"
