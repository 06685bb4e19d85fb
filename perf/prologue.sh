# The compare scripts' shared prologue, sourced first by each of them
# (perf/*-compare.sh and perf/*/*-compare.sh), so that they start alike:
#   . "$(dirname "${BASH_SOURCE[0]}")/prologue.sh"      (in perf/)
#   . "$(dirname "${BASH_SOURCE[0]}")/../prologue.sh"   (in perf/*/)
# It sets strict mode, `here` (the sourcing script's folder), `root` (the
# repository), `build` ($BUILD, else $root/build: a script that takes the
# build folder as $1 says build=${1:-$build}) and `node_bin` ($NODE, else
# node).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD:-$root/build}
node_bin=${NODE:-node}
