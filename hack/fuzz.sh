#!/usr/bin/env bash
# make fuzz / make fuzz-ci: builds the libFuzzer targets of fuzz/ and runs each for a while, one
# after the other, from a scratch copy of its committed seed corpus (fuzz/corpus/<target>/; the
# repository is never written). Prints per target the executions and the result; exits non-zero
# when any target crashed, leaked, hung or ran out of memory, naming the input that did it.
#
#   FUZZ_BUILD_DIR=build-fuzz   build tree. A new one is configured with clang++-14, AYATORI_FUZZ=ON
#                               and -O1 with assertions (Debug flags "-O1 -g"); an existing one
#                               (e.g. the AYATORI_SANITIZE tree) keeps its settings and only gets
#                               AYATORI_FUZZ=ON.
#   FUZZ_SECONDS=60             per target
#   FUZZ_TARGETS="quantity watch"  only these (default: every *_fuzzer of the build)
#   FUZZ_WORK_DIR               scratch: grown corpus, log and crash inputs of each target
#                               (default $FUZZ_BUILD_DIR/fuzz-run/<target>)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
SECONDS_PER_TARGET=${FUZZ_SECONDS:-60}
WORK=${FUZZ_WORK_DIR:-$BUILD/fuzz-run}

log() { printf 'fuzz: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

[[ $SECONDS_PER_TARGET =~ ^[0-9]+$ ]] && [ "$SECONDS_PER_TARGET" -gt 0 ] ||
  die "FUZZ_SECONDS must be a positive number of seconds, not '$SECONDS_PER_TARGET'"

if [ -f "$BUILD/CMakeCache.txt" ]; then
  # Checked here, before the option lands in the cache and breaks the next configure of the tree.
  grep -q '^CMAKE_CXX_COMPILER:.*clang' "$BUILD/CMakeCache.txt" ||
    die "$BUILD is not a clang build tree; libFuzzer needs one (use a new FUZZ_BUILD_DIR)"
  cmake -S "$ROOT" -B "$BUILD" -DAYATORI_FUZZ=ON >/dev/null
else
  command -v clang++-14 >/dev/null || die "clang++-14 is missing (make deps installs it)"
  CXX=clang++-14 cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DAYATORI_FUZZ=ON -DAYATORI_WERROR=ON >/dev/null
fi
cmake --build "$BUILD" --target fuzzers

if [ -n "${FUZZ_TARGETS:-}" ]; then
  read -r -a targets <<<"$FUZZ_TARGETS"
else
  targets=()
  for f in "$ROOT"/fuzz/*_fuzzer.cc; do
    f=${f##*/}
    targets+=("${f%_fuzzer.cc}")
  done
fi

failed=0
summary=()
for t in "${targets[@]}"; do
  bin=$BUILD/fuzz/${t}_fuzzer
  [ -x "$bin" ] || die "no fuzz target $t ($bin)"
  dir=$WORK/$t
  rm -rf "$dir"
  mkdir -p "$dir/corpus"
  [ -d "$ROOT/fuzz/corpus/$t" ] && cp -R "$ROOT/fuzz/corpus/$t/." "$dir/corpus/"
  args=(-max_total_time="$SECONDS_PER_TARGET" -print_final_stats=1 -artifact_prefix="$dir/"
        -timeout=25 -rss_limit_mb=2048)
  [ -f "$ROOT/fuzz/$t.dict" ] && args+=(-dict="$ROOT/fuzz/$t.dict")
  log "$t: ${SECONDS_PER_TARGET}s (log: $dir/log)"
  rc=0
  "$bin" "${args[@]}" "$dir/corpus" >"$dir/log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -n1)
  if [ -z "$execs" ]; then
    # A crash ends the run before the final stats; the last progress line has the count.
    execs=$(grep -o '^#[0-9]*' "$dir/log" | tail -n1 | tr -d '#')
  fi
  if [ "$rc" -eq 0 ]; then
    result=ok
  else
    failed=1
    finding=$(find "$dir" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o \
      -name 'timeout-*' -o -name 'oom-*' -o -name 'slow-unit-*' \) | head -n1)
    result="FAILED (exit $rc; input: ${finding:-none saved}; see $dir/log)"
    grep -E 'ERROR: |FUZZ_CHECK failed|runtime error|what\(\)|SUMMARY:' "$dir/log" | head -n5 >&2 || true
  fi
  summary+=("$(printf '%-20s %12s executions  %s' "$t" "${execs:-?}" "$result")")
done

printf '\nfuzz: %s s per target\n' "$SECONDS_PER_TARGET"
printf '%s\n' "${summary[@]}"
exit "$failed"
