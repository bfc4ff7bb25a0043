#!/usr/bin/env bash
# Rewrites the README's performance section (between the PERFORMANCE markers) from a fresh run
# of the benchmark, so its figures are always measured, never typed. Extra arguments go to
# runloop-bench (for example: wakeup timers).
set -euo pipefail
cd "$(dirname "$0")/.."
section=$(mktemp)
trap 'rm -f "$section"' EXIT
rm -f Benchmarks/.build/release.yaml  # see the Makefile's BENCH
swift run --package-path Benchmarks -c release runloop-bench --markdown "$section" "$@"
awk -v section="$section" '
    /<!-- PERFORMANCE:BEGIN/ { print; while ((getline line < section) > 0) print line; skipping = 1; next }
    /<!-- PERFORMANCE:END/ { skipping = 0 }
    !skipping { print }
' README.md > README.md.new
mv README.md.new README.md
echo "README.md: performance section rewritten"
