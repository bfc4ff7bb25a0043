#!/usr/bin/env bash
# Rewrites the README's performance section (between the PERFORMANCE markers) and the pictures
# section of the DocC Performance page (between the PLOTS markers) from a fresh run of the
# benchmark, and redraws the pictures both show, so their figures are always measured, never
# typed. The pictures and the data each is drawn from are checked in under the DocC catalog's
# Resources, where DocC finds them and the README links them. Extra arguments go to
# runloop-bench (for example: wakeup timers).
set -euo pipefail
cd "$(dirname "$0")/.."
plots=Sources/RunLoopKit/RunLoopKit.docc/Resources/performance
page=Sources/RunLoopKit/RunLoopKit.docc/Performance.md
section=$(mktemp)
pictures=$(mktemp)
trap 'rm -f "$section" "$pictures"' EXIT
rm -f Benchmarks/.build/release.yaml  # see the Makefile's BENCH
rm -f "$plots"/*.svg "$plots"/*.dat
swift run --package-path Benchmarks -c release runloop-bench \
    --markdown "$section" --plots "$plots" --plot-links "$plots" --docc-plots "$pictures" "$@"
# Replaces the lines between the markers named $1 in file $2 with the contents of file $3.
splice() {
    awk -v begin="<!-- $1:BEGIN" -v end="<!-- $1:END" -v part="$3" '
        index($0, begin) == 1 { print; while ((getline line < part) > 0) print line; skipping = 1; next }
        index($0, end) == 1 { skipping = 0 }
        !skipping { print }
    ' "$2" > "$2.new"
    mv "$2.new" "$2"
}
splice PERFORMANCE README.md "$section"
splice PLOTS "$page" "$pictures"
echo "README.md and $page: performance sections and pictures rewritten"
