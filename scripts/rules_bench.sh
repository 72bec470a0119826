#!/bin/sh
# House-rule benchmarks (docs/performance.md, "House rules").
#   scripts/rules_bench.sh closure   # transitive closure over `calls` of cuda-samples
#   scripts/rules_bench.sh big       # shipped rules/ on a ~10,000-kernel tree
# Needs a release build (cargo build --release). Timings are the engine's
# own (CUDALOG_LOG=info: "rules run: … ms", load + evaluation, no indexing).
set -e
B=${CUDALOG:-target/release/cudalog}
HERE=$(dirname "$0")
case "$1" in
closure)
    DB=${DB:-/tmp/rules_bench_cs.db}
    [ -f "$DB" ] || "$B" index /work/corpora/cuda-samples --db "$DB" >/dev/null
    for i in 1 2 3 4 5; do
        CUDALOG_LOG=info "$B" rules run "$HERE/rules_bench/calls_closure.dl" --db "$DB" 2>&1 | grep -E "rules run:|^\| *[0-9]" || true
    done ;;
big)
    OUT=${OUT:-/tmp/rules_big}
    DB=$OUT/.cudalog/cudalog.db
    if [ ! -f "$DB" ]; then
        # ~18 renamed copies of the three corpora (scripts/scale_tree.py)
        python3 "$HERE/scale_tree.py" "$OUT" 18 /work/corpora/rodinia_3.1 \
            /work/corpora/cuda-samples /work/corpora/llm.c --cudalog "$B"
        "$B" index "$OUT" >/dev/null
    fi
    sqlite3 "$DB" "SELECT COUNT(*) || ' kernels' FROM functions WHERE kind = 'kernel'"
    for f in rules/*.dl; do printf '%s ' "$f"; done; echo
    for i in 1 2 3; do
        CUDALOG_LOG=info "$B" rules run rules/*.dl --db "$DB" 2>&1 >/dev/null | grep "rules run:" || true
    done ;;
*) echo "usage: $0 closure|big" >&2; exit 2 ;;
esac
