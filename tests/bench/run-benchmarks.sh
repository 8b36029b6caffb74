#!/usr/bin/env bash
# The benchmarks, in one command (not tests: the machine is shared and noisy, so each prints
# ratios measured within its own run). Builds the release preset if needed, runs:
#   bench_ledger   full recompute (ledger + ladder + every curve) vs the 1 ms budget
#   bench_replot   the window's change-to-finished-replot latency, offscreen, 240 changes
#   bench_traffic  the Traffic tab's recompute (every ladder step's curve) vs its 1 s budget
#   bench_traffic_stall  the GUI thread's timer lateness and change time while the Traffic
#                  tab's worker recomputes, against the same without it
#   bench_probe    the CPU probe at batch 8 x 8K, one Llama-3-8B layer, against its targets:
#                  FP16 / INT8 paged decode >= 60% of a read stream, store >= 40% of copy,
#                  paged / contiguous <= 1.10x, INT8 / FP16 decode time <= 0.6x (medians of
#                  alternating rounds, with the load average and the CPU time the host stole),
#                  then a read stream pass and the decode steps of the four configurations
#                  timed in turn, each round (steadier ratios; the decode targets judged again)
#   bench_probe_stall  the window's longest event-loop stall while the probe runs, and cancel time
# and writes their JSON to build/release/bench-results/.
# usage: tests/bench/run-benchmarks.sh [probe]     (probe: bench_probe alone)
set -euo pipefail
cd "$(dirname "$0")/../.."
only="${1:-all}"
targets="bench_ledger bench_replot bench_traffic bench_traffic_stall bench_probe bench_probe_stall"
[ "$only" = probe ] && targets="bench_probe"
[ -f build/release/build.ninja ] || cmake --preset release >/dev/null
# shellcheck disable=SC2086
cmake --build --preset release --target $targets >/dev/null
out=build/release/bench-results
mkdir -p "$out"
echo "machine: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$only" != probe ]; then
  echo; build/release/tests/core/bench_ledger --json "$out/ledger.json"
  echo; QT_QPA_PLATFORM=offscreen build/release/tests/bench/bench_replot --json "$out/replot.json" 2>/dev/null
  echo; build/release/tests/bench/bench_traffic
  echo; QT_QPA_PLATFORM=offscreen build/release/tests/bench/bench_traffic_stall 2>/dev/null
fi
echo; build/release/tests/bench/bench_probe --json "$out/probe.json"
if [ "$only" != probe ]; then
  echo; QT_QPA_PLATFORM=offscreen build/release/tests/bench/bench_probe_stall 2>/dev/null || echo "bench_probe_stall: over its limits (see above)"
fi
echo; echo "JSON: $out/"
