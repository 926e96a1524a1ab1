#!/bin/sh
# run.sh — runs each libFuzzer target for FUZZ_SECONDS (default 60) over a working copy of its
# seed corpus and fails on any crash, leak, timeout or sanitizer report. Usage:
#   sh tests/fuzz/run.sh [OUT]          (OUT: where build.sh put the targets; default build-fuzz)
#   FUZZ_SECONDS=1200 FUZZ_TARGETS="fuzz_png" sh tests/fuzz/run.sh
# The checked-in seeds (tests/fuzz/corpus/NAME) are never written to; new inputs go to
# OUT/corpus/NAME, findings to OUT/artifacts/, each run's log to OUT/logs/NAME.log.
set -u
cd "$(dirname "$0")/../.."
OUT=${1:-${OUT:-build-fuzz}}
SECS=${FUZZ_SECONDS:-60}
TARGETS=${FUZZ_TARGETS:-fuzz_png fuzz_png_diff fuzz_image fuzz_request fuzz_params fuzz_inflate_spec fuzz_deflate_chunks}
mkdir -p "$OUT/logs" "$OUT/artifacts"
failed=0
for t in $TARGETS; do
    name=${t#fuzz_}
    [ -x "$OUT/$t" ] || { echo "$t: not built (sh tests/fuzz/build.sh $OUT)"; failed=1; continue; }
    seeds=$name
    [ "$name" = png_diff ] && seeds=png
    mkdir -p "$OUT/corpus/$name"
    dict=""
    case $name in
    params) dict="-dict=tests/fuzz/params.dict" ;;
    request) cat tests/fuzz/request.dict tests/fuzz/params.dict > "$OUT/request_all.dict"; dict="-dict=$OUT/request_all.dict" ;;
    esac
    rm -f "$OUT/artifacts/$t-"*
    # shellcheck disable=SC2086
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
        "$OUT/$t" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -max_len=1048576 -print_final_stats=1 \
        -artifact_prefix="$OUT/artifacts/$t-" $dict "$OUT/corpus/$name" "tests/fuzz/corpus/$seeds" \
        > "$OUT/logs/$name.log" 2>&1
    rc=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$OUT/logs/$name.log" | grep -o '[0-9]*$')
    speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$OUT/logs/$name.log" | grep -o '[0-9]*$')
    cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$OUT/logs/$name.log" | tail -n 1)
    found=$(ls "$OUT/artifacts/$t-"* 2>/dev/null | wc -l)
    reports=$(grep -c -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:' "$OUT/logs/$name.log")
    printf '%-13s %5ss  %10s execs  %7s exec/s  %-22s findings %s  exit %s\n' "$t" "$SECS" "${execs:-?}" \
        "${speed:-?}" "${cov:-?}" "$found" "$rc"
    if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ] || [ "$reports" -ne 0 ]; then
        failed=1
        grep -E -A 25 'ERROR:|runtime error:' "$OUT/logs/$name.log" | head -n 40
    fi
done
[ $failed -eq 0 ] && echo "fuzz-smoke: no findings" || echo "fuzz-smoke: FAILED (logs and inputs in $OUT)"
exit $failed
