#!/usr/bin/env bash
# The tools' man pages (issue 36), as `meson install` ships them: each
# renders with `man -l` (MANWIDTH=80, no pager), has the sections NAME,
# SYNOPSIS, OPTIONS, EXIT STATUS and EXAMPLES, and names every option that
# the tool's --help lists; an option an EXAMPLES line uses is one --help
# lists. The pages are made from --help at build time (tools/man/), so a
# page missing an option is a page that --help and the page disagree on.
#
#   tests/tools/man_test.sh MAN_DIR TOOL...
set -euo pipefail
man_dir=$1
shift
command -v man >/dev/null || { echo "man_test: skipped: no man (apt-get install man-db groff-base)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

for tool in "$@"; do
  name=$(basename "$tool")
  page=$man_dir/$name.1
  [[ -f $page ]] || fail "$name: no man page at $page"
  # LC_ALL=C: ASCII hyphens, as --help has them.
  st=0
  LC_ALL=C MANWIDTH=80 MANPAGER=cat PAGER=cat man -l "$page" >"$tmp/page" 2>"$tmp/err" || st=$?
  [[ $st -eq 0 && -s $tmp/page ]] || fail "$name: man -l exits $st: $(cat "$tmp/err")"
  for section in NAME SYNOPSIS OPTIONS "EXIT STATUS" EXAMPLES; do
    grep -qx "$section" "$tmp/page" || fail "$name: no $section section in: $(grep -E '^[A-Z]' "$tmp/page" | tr '\n' '|')"
  done
  grep -A1 -x NAME "$tmp/page" | grep -qE "^ *$name +- " || fail "$name: NAME is not '$name - ...'"
  "$tool" --help >"$tmp/help"
  python3 - "$name" "$tmp/help" "$tmp/page" <<'PY'
import re, sys
name, help_path, page_path = sys.argv[1:]
help_text = open(help_path).read()
page = open(page_path).read()
token = re.compile(r"-{1,2}[A-Za-z][A-Za-z0-9-]*$")
# The options --help lists: the leading option words of a line indented by
# two to six spaces ('  -h, --help  show ...', '  -c -F TEXT  ...').
listed = []
for line in help_text.splitlines():
    m = re.match(r" {2,6}(-.*)", line)
    if not m:
        continue
    for word in m.group(1).split():
        word = word.rstrip(",")
        if not token.match(word):
            break
        listed.append(word)
if not listed:
    sys.exit(f"FAIL: {name}: --help lists no option (the test's reading of it is wrong)")
def named(text, opt):
    return re.search(r"(^|[^A-Za-z0-9-])" + re.escape(opt) + r"($|[^A-Za-z0-9-])", text, re.M) is not None
missing = [o for o in listed if not named(page, o)]
if missing:
    sys.exit(f"FAIL: {name}: the man page does not name {', '.join(missing)}, which --help lists")
# What EXAMPLES runs is what --help offers.
examples = page.split("\nEXAMPLES\n", 1)[1].split("\nSEE ALSO\n", 1)[0]
for opt in set(re.findall(r"(?<![A-Za-z0-9-])--[a-z][a-z0-9-]*", examples)):
    if not named(help_text, opt):
        sys.exit(f"FAIL: {name}: EXAMPLES uses {opt}, which --help does not list")
print(f"ok: {name}: {len(set(listed))} options of --help in the page")
PY
done
echo "man_test: $# pages"
