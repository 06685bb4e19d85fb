#!/usr/bin/env bash
# Every ```cpp block of README.md and docs/*.md compiles against the built
# library, as a reader would copy it:
#   - a block with `int main(` is a program: compiled and linked with
#     libsluice (not run: a server example would listen forever);
#   - any other block is a translation unit (a function, a class): compiled
#     (-c), not linked;
#   - a block right after a line `<!-- fragment -->` is statements: it is
#     compiled inside `int main() { ... }` after `#include <sluice/sluice.h>`
#     (use it only where a whole program would hide the point).
# Each block gets -std=c++20 -Wall -Wextra -Werror and nothing of the
# others. A failure names the file and the line where the block starts.
#
#   tests/docs/compile-docs.sh SOURCE_ROOT LIB_BUILD_DIR SANITIZE CXX [CXX_ARG]...
set -euo pipefail
src=$1 libdir=$2 sanitize=$3
shift 3
cxx=("$@")
tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT

command -v pkg-config >/dev/null || { echo "compile-docs.sh: skipped: no pkg-config"; exit 77; }
# shellcheck disable=SC2207  # flags are words
fmt_cflags=($(pkg-config --cflags fmt)) fmt_libs=($(pkg-config --libs fmt))
flags=(-std=c++20 -Wall -Wextra -Werror -O0 -I"$src/lib" -I"$libdir" "${fmt_cflags[@]}")  # $libdir: the generated sluice/base/config.h
[[ $sanitize == none ]] || flags+=(-fsanitize="$sanitize")

# Splits each file's blocks into $tmp/N.cc, with $tmp/N.where (FILE:LINE) and
# $tmp/N.kind (program, unit or fragment).
python3 - "$tmp" "$src/README.md" "$src"/docs/*.md <<'PY'
import sys, os
out = sys.argv[1]
n = 0
for path in sys.argv[2:]:
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```cpp":
            start = i + 1
            prev = next((l.strip() for l in reversed(lines[:i]) if l.strip()), "")
            j = start
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            body = "\n".join(lines[start:j]) + "\n"
            if prev == "<!-- fragment -->":
                kind = "fragment"
                body = "#include <sluice/sluice.h>\n#include <cstdio>\n#include <string>\n#include <unistd.h>\nint main() {\n" + body + "}\n"
            elif "int main(" in body:
                kind = "program"
            else:
                kind = "unit"
            n += 1
            open(os.path.join(out, f"{n}.cc"), "w").write(body)
            open(os.path.join(out, f"{n}.where"), "w").write(f"{os.path.relpath(path, os.path.dirname(sys.argv[2]))}:{start}")
            open(os.path.join(out, f"{n}.kind"), "w").write(kind)
            i = j
        i += 1

PY

failed=0 count=0
for cc in "$tmp"/*.cc; do
  [[ -e $cc ]] || continue
  n=${cc%.cc}
  where=$(cat "$n.where") kind=$(cat "$n.kind")
  count=$((count + 1))
  if [[ $kind == unit ]]; then
    cmd=("${cxx[@]}" "${flags[@]}" -c "$cc" -o "$n.o")
  else
    cmd=("${cxx[@]}" "${flags[@]}" "$cc" -o "$n.out" -L"$libdir" -Wl,-rpath,"$libdir" -lsluice "${fmt_libs[@]}" -pthread)
  fi
  if "${cmd[@]}" >"$n.log" 2>&1; then
    echo "ok: $where ($kind)"
  else
    echo "FAIL: $where ($kind) does not compile:"
    sed 's/^/    /' "$n.log" | head -n 40
    failed=$((failed + 1))
  fi
done
[[ $count -gt 0 ]] || { echo "FAIL: no \`\`\`cpp block found"; exit 1; }
echo "$count blocks, $failed failed"
[[ $failed -eq 0 ]]
