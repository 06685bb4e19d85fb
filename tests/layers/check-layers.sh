#!/usr/bin/env bash
# Every #include "sluice/..." in lib/ points down the layers of
# docs/architecture.md: to its own layer or a lower one. Prints each include
# that points up, and a file that belongs to no layer, and fails on any.
# Then what an include check cannot see: a file below the streams that names
# a stream class anyway (a forward declaration, a friend, a pointer, a
# reference, a value), and a stream file that defines a member of the sink or
# source layer. The seam between them is sink_host and source_host.
# Last, what users write (tools/, docs/, README.md, tests/examples/,
# tests/consumer/) includes no component's internals (a detail/ folder, the
# queue), and nothing outside lib/ but the tests includes
# base/detail/syscalls.h, the table they swap.
#
#   tests/layers/check-layers.sh [LIBDIR]     (default: lib/ beside this script)
set -euo pipefail
lib=${1:-"$(dirname "$0")/../../lib"}
cd "$lib"

# The layers, bottom (0) to top: a table of folders. A component's internals
# (its detail/) keep its layer. docs/architecture.md draws the same table.
layer_of() {
  case "$1" in
    sluice/base/*) echo 0 ;;
    sluice/loop/*) echo 1 ;;
    sluice/queue/*) echo 2 ;;
    sluice/sinks/* | sluice/sources/*) echo 3 ;;
    sluice/stream/*) echo 4 ;;
    sluice/lines/* | sluice/net/* | sluice/zlib/* | sluice/fs/*) echo 5 ;;
    sluice/tls/* | sluice/log_file/* | sluice/kafka/* | sluice/logger/*) echo 6 ;;
    sluice/syslog/* | sluice/spool/*) echo 7 ;;
    sluice/asio/*) echo 8 ;;
    sluice/sluice.h) echo 9 ;;
    *) echo "" ;;
  esac
}
names=(base loop queue io streams protocols components relays asio umbrella)

bad=0
checked=0
while IFS= read -r file; do
  from=$(layer_of "$file")
  if [ -z "$from" ]; then
    echo "layers: $file belongs to no layer (add it to tests/layers/check-layers.sh and docs/architecture.md)"
    bad=$((bad + 1))
    continue
  fi
  while IFS= read -r inc; do
    checked=$((checked + 1))
    to=$(layer_of "$inc")
    if [ -z "$to" ]; then
      echo "layers: $file includes $inc, which belongs to no layer"
      bad=$((bad + 1))
    elif [ "$to" -gt "$from" ]; then
      echo "layers: $file (${names[$from]}) includes $inc (${names[$to]}): an include must point down"
      bad=$((bad + 1))
    fi
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\(sluice\/[^"]*\)".*/\1/p' "$file")
done < <(find sluice -name '*.h' -o -name '*.cc' | sort)

# The code of a file, without comments and string literals: what it names.
code_of() {
  sed -e 's:"\([^"\\]\|\\.\)*"::g' -e 's://.*$::' -e 's:/\*.*\*/::g' "$1"
}
streams='writable|readable|duplex|transform|fanout|stream_ref'
named=0
while IFS= read -r file; do
  from=$(layer_of "$file")
  [ -n "$from" ] && [ "$from" -lt 4 ] || continue
  while IFS= read -r hit; do
    echo "layers: $file (${names[$from]}) names a stream class: $hit"
    named=$((named + 1))
  done < <(code_of "$file" | grep -nE \
    -e "\\b(class|struct|friend)[[:space:]]+((class|struct)[[:space:]]+)?(sluice::)?($streams)\\b" \
    -e "\\b($streams)[[:space:]]*(\\*|&|::|>)" \
    -e "<[[:space:]]*(sluice::)?($streams)\\b" \
    -e "\\b($streams)[[:space:]]+[A-Za-z_][A-Za-z0-9_]*[[:space:]]*[;,)=({]" || true)
done < <(find sluice -name '*.h' -o -name '*.cc' | sort)
while IFS= read -r file; do
  while IFS= read -r hit; do
    echo "layers: $file (streams) defines a member of the io layer: $hit"
    named=$((named + 1))
  done < <(code_of "$file" |
    grep -nE "^[A-Za-z_].*[[:space:]&*](sluice::)?(sink|source|sink_host|source_host|write_done|final_done|write_batch)::[A-Za-z_~][A-Za-z0-9_]*[[:space:]]*\\(" || true)
done < <(find sluice/stream -name '*.cc' | sort)
bad=$((bad + named))

# What users write includes only public headers; the fault table is the tests'.
root=..
inner=0
while IFS= read -r hit; do
  echo "layers: $hit: includes a component's internals (detail/, queue/), which are not for users"
  inner=$((inner + 1))
done < <(cd "$root" && for d in tools docs README.md tests/examples tests/consumer; do
  [ -e "$d" ] && grep -rnE '#[[:space:]]*include[[:space:]]*[<"]sluice/([a-z_]+/)*(detail|queue)/' "$d" || true
done)
while IFS= read -r hit; do
  echo "layers: $hit: only the tests swap the syscall table (sluice/base/detail/syscalls.h)"
  inner=$((inner + 1))
done < <(cd "$root" && for d in tools perf docs README.md tests/examples tests/consumer tests/fuzz; do
  [ -e "$d" ] && grep -rnE '#[[:space:]]*include[[:space:]]*[<"]sluice/base/detail/syscalls\.h' "$d" || true
done)
bad=$((bad + inner))

if [ "$checked" -eq 0 ]; then
  echo "layers: no include found under $lib: wrong directory?"
  exit 1
fi
echo "layers: $checked includes checked, $((bad - named - inner)) pointing up or unplaced, $named stream names below the streams, $inner detail/ includes outside lib/"
[ "$bad" -eq 0 ]
