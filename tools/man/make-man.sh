#!/usr/bin/env bash
# make-man.sh HELP2MAN TOOL INCLUDE VERSION OUTPUT: TOOL's man page, made by
# help2man from what `TOOL --help` prints when the page is built, so that the
# page and --help cannot say different things; INCLUDE (tools/man/*.h2m)
# adds the NAME line, EXIT STATUS, EXAMPLES and SEE ALSO.
#
# help2man reads GNU's layout, and sluice's --help differs in three ways,
# turned here into GNU's (the text itself is left as it is):
#   'usage: TOOL ...'               -> 'Usage: TOOL ...' (the SYNOPSIS)
#   '       TOOL ...' after it       -> '  or:  TOOL ...' (more SYNOPSIS lines)
#   'Options for X:' (sluice-log)    -> 'Options:' and 'For X:' (the OPTIONS)
set -euo pipefail
help2man=$1 tool=$2 include=$3 version=$4 out=$5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
name=$(basename "$tool")
"$tool" --help >"$tmp/help"
sed -e '1s/^usage: /Usage: /' \
    -e "2,/^[^ ]/s/^       \\($name \\)/  or:  \\1/" \
    -e 's/^Options for \(.*\):$/Options:\nFor \1:/' "$tmp/help" >"$tmp/help.gnu"
# help2man runs the program it is given: one named as the tool, that prints
# the text above.
mkdir "$tmp/bin"
printf '#!/bin/sh\nexec cat "%s"\n' "$tmp/help.gnu" >"$tmp/bin/$name"
chmod +x "$tmp/bin/$name"
"$help2man" --no-info --section=1 --manual="User Commands" --source="sluice $version" \
  --version-string="$version" --include="$include" --output="$out" "$tmp/bin/$name"
