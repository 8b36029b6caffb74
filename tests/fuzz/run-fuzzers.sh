#!/usr/bin/env bash
# Builds the libFuzzer targets with Debian's clang (ASan + UBSan). Each target first replays
# every file of its corpus in tests/fuzz/corpus/<target> once (a regression test: any crash,
# leak or timeout fails), then fuzzes for a bounded time on a copy of that corpus. New crashes
# land in build-fuzz/. CI (.ci/run) runs it.
# usage: tests/fuzz/run-fuzzers.sh [SECONDS_PER_TARGET]   (default 60; 0 = replay only)
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-60}
command -v clang++ >/dev/null || apt-get install -y -q clang libclang-rt-14-dev >/dev/null
# No emulated-cuda backend here: no target fuzzes it, and clang 14 lacks std::source_location.
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DKVL_PROBE_ONLY=ON -DKVL_ENABLE_CUDA=OFF -DKVL_ENABLE_CUDA_EMULATOR=OFF \
  -DKVL_BUILD_FUZZERS=ON >/dev/null || { echo "!! configuring the fuzz build failed"; exit 1; }
cmake --build build-fuzz -j2 >build-fuzz/build.log 2>&1 ||
  { echo "!! building the fuzz targets failed:"; grep -E "error|FAILED" build-fuzz/build.log | head -20; exit 1; }
rm -f build-fuzz/crash-* build-fuzz/leak-* build-fuzz/timeout-* # from an earlier run
status=0
for t in build-fuzz/tests/fuzz/fuzz_*; do
  name=$(basename "$t"); corpus=tests/fuzz/corpus/${name#fuzz_}
  work=build-fuzz/corpus-$name; rm -rf "$work"; mkdir -p "$work"; cp -r "$corpus"/. "$work"/ 2>/dev/null || true
  [ -d "$corpus" ] && [ -n "$(ls -A "$corpus")" ] || { echo "!! $name has no corpus in $corpus"; status=1; continue; }
  echo "== $name: replaying $(ls "$corpus" | wc -l) corpus files"
  if ! (cd build-fuzz && "../$t" -timeout=10 -rss_limit_mb=2048 "$(realpath "../$corpus")"/* >replay-$name.log 2>&1); then
    echo "!! $name failed on its own corpus:"; tail -20 "build-fuzz/replay-$name.log"; status=1; continue
  fi
  [ "$secs" -gt 0 ] || continue
  echo "== $name: fuzzing ${secs}s"
  if ! (cd build-fuzz && "../$t" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
         -print_final_stats=1 "../$work" 2>&1 | grep -E "^(stat::number_of_executed_units|stat::new_units_added|==.*ERROR|SUMMARY)|Done"); then
    :
  fi
  # compgen, not ls: ls of three globs fails when any one matches nothing, which hid crashes
  # whenever there was no leak and no timeout beside them.
  if compgen -G "build-fuzz/crash-*" >/dev/null || compgen -G "build-fuzz/leak-*" >/dev/null ||
     compgen -G "build-fuzz/timeout-*" >/dev/null; then
    echo "!! $name found a problem:"; ls build-fuzz/crash-* build-fuzz/leak-* build-fuzz/timeout-* 2>/dev/null; status=1
    mkdir -p build-fuzz/found-$name; mv build-fuzz/crash-* build-fuzz/leak-* build-fuzz/timeout-* build-fuzz/found-$name/ 2>/dev/null || true
  fi
done
[ $status -eq 0 ] && echo "fuzzing: no crashes, leaks or timeouts" || echo "fuzzing: FAILURES (see above)"
exit $status
