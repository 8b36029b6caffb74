#!/usr/bin/env bash
# The benchmarks, in one command (not tests: the machine is shared and noisy, so each prints
# ratios measured within its own run). Builds the release preset if needed, runs:
#   bench_ledger   full recompute (ledger + ladder + every curve) vs the 1 ms budget
#   bench_replot   the window's change-to-finished-replot latency, offscreen, 240 changes
#   bench_probe    CPU probe store/attention vs copy and read stream; paged vs contiguous;
#                  INT8 vs FP16
#   bench_probe_stall  the window's longest event-loop stall while the probe runs, and cancel time
# and writes their JSON to build/release/bench-results/.
# usage: tests/bench/run-benchmarks.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -f build/release/build.ninja ] || cmake --preset release >/dev/null
cmake --build --preset release --target bench_ledger bench_replot bench_probe bench_probe_stall >/dev/null
out=build/release/bench-results
mkdir -p "$out"
echo "machine: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)"
echo; build/release/tests/core/bench_ledger --json "$out/ledger.json"
echo; QT_QPA_PLATFORM=offscreen build/release/tests/bench/bench_replot --json "$out/replot.json" 2>/dev/null
echo; build/release/tests/bench/bench_probe --json "$out/probe.json"
echo; QT_QPA_PLATFORM=offscreen build/release/tests/bench/bench_probe_stall 2>/dev/null || echo "bench_probe_stall: over its limits (see above)"
echo; echo "JSON: $out/{ledger,replot,probe}.json"
