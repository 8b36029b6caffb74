#!/usr/bin/env bash
# Device check for the probe on a machine with a GPU, CMake, nvcc and a C++ compiler, no Qt.
# Builds the probe-only configuration, then runs `kvprobe info`, `check` and `bench` on the
# CUDA backend and writes every JSON and log under $OUT (default ./out). About 6 minutes on
# an H200 (build ~1-2 min, check ~1 min, bench ~3 min). Exit status: 0 when everything
# passed, 1 when a check or bench row failed, 2 when the build failed.
#
#   OUT=/tmp/out gpu_probe/scripts/device-check.sh          # CUDA_ARCH=90 to build sm_90 only
set -u -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${OUT:-./out}"
BUILD="${BUILD:-$ROOT/build-device}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 4)}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
LOG="$OUT/device-check.log"
: > "$LOG"
log() { echo "[device-check $(date -u +%H:%M:%S)] $*" | tee -a "$LOG"; }

status=0
step() { # step NAME TIMEOUT_S OUTFILE -- command...
    local name="$1" limit="$2" outfile="$3"
    shift 4
    log "$name: $*"
    local t0=$SECONDS
    timeout "$limit" "$@" > "$outfile" 2> "$OUT/$name.log"
    local rc=$?
    log "$name: exit $rc after $((SECONDS - t0)) s"
    [ $rc -eq 124 ] && log "$name: timed out after $limit s"
    return $rc
}

arch_flag=()
[ -n "${CUDA_ARCH:-}" ] && arch_flag=(-DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH")
log "configure $ROOT -> $BUILD (probe-only)"
if ! cmake -S "$ROOT" -B "$BUILD" -DKVL_PROBE_ONLY=ON -DCMAKE_BUILD_TYPE=Release "${arch_flag[@]}" \
        > "$OUT/configure.log" 2>&1; then
    log "configure failed (see configure.log)"; exit 2
fi
if ! grep -q "CUDA backend ON" "$OUT/configure.log"; then
    log "warning: CUDA was not found at configure time; only the CPU backend is built"
fi
if ! cmake --build "$BUILD" --target kvprobe -j "$JOBS" > "$OUT/build.log" 2>&1; then
    log "build failed (see build.log)"; exit 2
fi
KV="$BUILD/gpu_probe/kvprobe"
command -v nvidia-smi > /dev/null && nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1

step info 60 "$OUT/info.json" -- "$KV" info --json || status=1
step check-cuda 150 "$OUT/check-cuda.json" -- "$KV" check --backend cuda --json || status=1
step bench-cuda 300 "$OUT/bench-cuda.json" -- "$KV" bench --backend cuda --json || status=1
# A human-readable table of the same bench is cheap to derive later; keep the run short.

# Name the results with the GPU and the date, ready for gpu_probe/results/.
gpu="$(sed -n 's/.*"device": "\([^"]*\)".*/\1/p' "$OUT/bench-cuda.json" 2>/dev/null | head -1)"
gpu="$(echo "${gpu:-unknown-gpu}" | tr 'A-Z ' 'a-z-' | tr -cd 'a-z0-9-')"
stamp="$(date -u +%Y-%m-%d)"
[ -s "$OUT/bench-cuda.json" ] && cp "$OUT/bench-cuda.json" "$OUT/bench-$gpu-$stamp.json"
[ -s "$OUT/check-cuda.json" ] && cp "$OUT/check-cuda.json" "$OUT/check-$gpu-$stamp.json"
grep -h '"passed"\|"failed"' "$OUT/check-cuda.json" 2>/dev/null | head -2 | tee -a "$LOG"
tail -n 1 "$OUT/check-cuda.log" 2>/dev/null | tee -a "$LOG"
log "done: status $status; results in $OUT"
exit $status
