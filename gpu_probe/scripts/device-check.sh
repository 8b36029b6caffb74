#!/usr/bin/env bash
# The probe's device check, fitted to a short GPU lease: on a fresh machine with only CMake, nvcc
# and a C++ compiler (no Qt, no JSON library, no network) it finishes in under 8 minutes and
# leaves at most 8 files under $OUT (the device tool brings back 8):
#
#   device-check.log            the environment, every stage's exit status and seconds, a summary
#   info.json                   kvprobe info --json
#   check-TAG.json              kvprobe check --backend cuda --json
#   bench-TAG.jsonl             kvprobe bench --quick, one JSON line per row as it finishes
#   bench-TAG.json              the whole bench document (only when the bench finished)
#   logs-TAG.tar.gz             configure, build, ctest, check, bench and sanitizer logs
#
# TAG is the GPU and the date (nvidia-h200-2026-12-01), ready for gpu_probe/results/.
# Stages: 1 environment (nvidia-smi, nvcc, cmake, memory); 2 configure + build (probe-only, sm_90
# only, Ninja when present, nvcc --threads=0; exit 2 when the CUDA backend is off); 3 ctest in
# that build (its tests are the quick ones, the device's check --quick and ptxas_resources among
# them; that one's verdict goes to the summary); 4 kvprobe check --backend cuda; 5 kvprobe bench
# --quick with --jsonl, so a timeout keeps the rows that ran; 6 compute-sanitizer memcheck on one
# small run (skipped when absent or out of time); 7 the logs into one tar. Every stage has a time
# limit inside the whole budget (KVL_DEVICE_BUDGET_S, default 450 s; the build alone
# KVL_DEVICE_BUILD_S, default 270 s); the bench gets what is left.
#
# Exit status: 0 all passed; 1 a test, check, bench row or the sanitizer failed (or timed out);
# 2 configure or build failed, or the CUDA backend is off.
#
#   gpu_probe/scripts/device-check.sh                          # on the GPU machine, OUT set there
#   KVL_DEVICE_BACKEND=cpu gpu_probe/scripts/device-check.sh   # rehearsal anywhere: the same
#                                                              # stages, CPU backend, no CUDA
#   KVL_DEVICE_DRY_RUN=1 gpu_probe/scripts/device-check.sh     # print each stage's command only
set -u -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BACKEND="${KVL_DEVICE_BACKEND:-cuda}"
BUDGET="${KVL_DEVICE_BUDGET_S:-450}"
DRY_RUN="${KVL_DEVICE_DRY_RUN:-0}"
OUT="${OUT:-$ROOT/out}"
BUILD="${BUILD:-$ROOT/build-device}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 4)}"
case "$BACKEND" in cuda | cpu) ;; *) echo "KVL_DEVICE_BACKEND must be cuda or cpu" >&2; exit 2 ;; esac

mkdir -p "$OUT" "$BUILD"
OUT="$(cd "$OUT" && pwd)"
LOGS="$BUILD/device-logs"
rm -rf "$LOGS" && mkdir -p "$LOGS"
SUMMARY="$OUT/device-check.log"
: > "$SUMMARY"
T0=$SECONDS
say() { echo "[device-check +$((SECONDS - T0))s] $*" | tee -a "$SUMMARY"; }
left() { echo $((BUDGET - (SECONDS - T0))); }

# --- 1. the environment, first ----------------------------------------------------------------
gpu="cpu-rehearsal"
if [ "$BACKEND" = cuda ] && command -v nvidia-smi > /dev/null; then
    gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -1)"
fi
TAG="$(echo "${gpu:-unknown-gpu}" | tr 'A-Z ' 'a-z-' | tr -cd 'a-z0-9-')-$(date -u +%Y-%m-%d)"
{
    echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -srm), $(nproc) CPUs, backend $BACKEND, budget ${BUDGET}s"
    echo "== memory"; grep -E '^(MemTotal|MemAvailable)' /proc/meminfo
    echo "== nvidia-smi"
    if command -v nvidia-smi > /dev/null; then
        nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv 2>&1
        nvidia-smi 2>&1 | head -20
    else
        echo "(no nvidia-smi)"
    fi
    echo "== nvcc"; (command -v nvcc > /dev/null && nvcc --version | tail -2) || echo "(no nvcc on PATH)"
    echo "== cmake"; cmake --version | head -1
    echo "== ninja"; (command -v ninja > /dev/null && ninja --version) || echo "(no ninja: make)"
    echo "== c++"; (c++ --version 2> /dev/null || g++ --version) | head -1
    echo "== compute-sanitizer"
    (command -v compute-sanitizer > /dev/null && compute-sanitizer --version | tail -1) || echo "(absent)"
} 2>&1 | tee -a "$SUMMARY"

# --- stages -------------------------------------------------------------------------------------
STATUS=0
TABLE=""
# stage NAME LIMIT_S STDOUT LOG command...: runs under the smaller of LIMIT_S and the time left,
# stdout to STDOUT (a result file, or - for LOG), stderr appended to LOG.
stage() {
    local name="$1" limit="$2" out="$3" log="$4"
    shift 4
    [ "$out" = - ] && out="$log"
    local budget; budget="$(left)"
    [ "$limit" -gt "$budget" ] && limit="$budget"
    if [ "$limit" -lt 5 ]; then
        say "$name: skipped (out of time)"
        TABLE+="$(printf '%-12s %6s %6s  %s' "$name" skip 0 'out of time')"$'\n'
        return 124
    fi
    if [ "$DRY_RUN" = 1 ]; then
        say "$name: would run (limit ${limit}s, stdout to ${out#"$ROOT"/}): $*"
        TABLE+="$(printf '%-12s %6s %6s  %s' "$name" dry 0 'dry run')"$'\n'
        return 0
    fi
    say "$name: start (limit ${limit}s)"
    local t=$SECONDS
    if [ "$out" = "$log" ]; then
        timeout --kill-after=5 "$limit" "$@" >> "$log" 2>&1
    else
        timeout --kill-after=5 "$limit" "$@" > "$out" 2>> "$log"
    fi
    local rc=$?
    local secs=$((SECONDS - t)) note=""
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then note="timed out after ${limit}s"; fi
    say "$name: exit $rc after ${secs}s ${note}"
    TABLE+="$(printf '%-12s %6s %6s  %s' "$name" "$rc" "$secs" "$note")"$'\n'
    return $rc
}

# --- 2. configure and build -------------------------------------------------------------------
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
if [ "$BACKEND" = cuda ]; then
    backend_flags=(-DKVL_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 "-DCMAKE_CUDA_FLAGS=--threads=0")
else
    backend_flags=(-DKVL_ENABLE_CUDA=OFF)
fi
stage configure 90 - "$LOGS/configure.log" cmake -S "$ROOT" -B "$BUILD" "${generator[@]}" \
    -DKVL_PROBE_ONLY=ON -DCMAKE_BUILD_TYPE=Release -DKVL_BUILD_BENCHMARKS=OFF "${backend_flags[@]}"
rc=$?
if [ $rc -ne 0 ]; then
    tail -20 "$LOGS/configure.log" | tee -a "$SUMMARY"
    say "configure failed"; STATUS=2
elif [ "$BACKEND" = cuda ] && [ "$DRY_RUN" != 1 ] && ! grep -q "CUDA backend ON" "$LOGS/configure.log"; then
    grep "CUDA" "$LOGS/configure.log" | tail -5 | tee -a "$SUMMARY"
    say "the CUDA backend is OFF (no CUDA compiler found at configure time)"; STATUS=2
fi
if [ $STATUS -eq 0 ]; then
    stage build "${KVL_DEVICE_BUILD_S:-270}" - "$LOGS/build.log" cmake --build "$BUILD" -j "$JOBS"
    if [ $? -ne 0 ]; then
        grep -E "error|Error" "$LOGS/build.log" | head -20 | tee -a "$SUMMARY"
        tail -5 "$LOGS/build.log" | tee -a "$SUMMARY"
        say "build failed"; STATUS=2
    fi
fi

KV="$BUILD/gpu_probe/kvprobe"
if [ $STATUS -eq 0 ]; then
    stage info 20 "$OUT/info.json" "$LOGS/info.log" "$KV" info --json || STATUS=1
    grep -E '"(name|available|reason|device|details)"' "$OUT/info.json" 2> /dev/null | tr -s ' ' | tee -a "$SUMMARY"

    # --- 3. ctest in the probe-only build (its tests are the quick ones) ----------------------
    stage ctest 120 - "$LOGS/ctest.log" ctest --test-dir "$BUILD" -j "$JOBS" --timeout 90 \
        --output-on-failure || STATUS=1
    tail -3 "$LOGS/ctest.log" 2> /dev/null | tee -a "$SUMMARY"

    # ptxas's resources of every hot kernel instance (ctest ptxas_resources, part of the ctest
    # above): its verdict and any failing instance in the summary, every instance in the logs.
    if [ "$BACKEND" = cuda ]; then
        stage ptxas 30 - "$LOGS/ptxas.log" ctest --test-dir "$BUILD" -R '^ptxas_resources$' \
            --no-tests=error -V || STATUS=1
        grep -E '^[0-9]+: (FAIL |[0-9]+ hot kernel instances)' "$LOGS/ptxas.log" 2> /dev/null | head -20 |
            sed 's/^[0-9]*: //' | tee -a "$SUMMARY"
    fi

    # --- 4. check ---------------------------------------------------------------------------------
    stage check 150 "$OUT/check-$TAG.json" "$LOGS/check.log" "$KV" check --backend "$BACKEND" \
        --json || STATUS=1
    tail -1 "$LOGS/check.log" 2> /dev/null | tee -a "$SUMMARY"
    grep -B1 -A2 '"passed": false' "$OUT/check-$TAG.json" 2> /dev/null | grep '"name"\|"detail"' | head -10 |
        tee -a "$SUMMARY"

    # --- 5. bench --quick: rows as they finish; the sanitizer and the tar keep 45 s ------------
    reserve=45
    [ "$BACKEND" = cuda ] && command -v compute-sanitizer > /dev/null && reserve=90
    stage bench $(($(left) - reserve)) "$OUT/bench-$TAG.json" "$LOGS/bench.log" "$KV" bench \
        --backend "$BACKEND" --quick --jsonl "$OUT/bench-$TAG.jsonl" --json || STATUS=1
    # a bench cut short leaves a partial document: keep only the JSON lines then
    if ! tail -c 2 "$OUT/bench-$TAG.json" 2> /dev/null | grep -q '}'; then
        rm -f "$OUT/bench-$TAG.json"
        say "bench did not finish: its rows so far are in bench-$TAG.jsonl"
    fi

    # --- 6. compute-sanitizer memcheck on one small run -------------------------------------------
    if [ "$BACKEND" = cuda ] && command -v compute-sanitizer > /dev/null; then
        stage memcheck 60 - "$LOGS/memcheck.log" compute-sanitizer --tool memcheck \
            --error-exitcode 86 --print-limit 20 "$KV" run --backend cuda --model llama-3-8b \
            --kv-dtype int8 --block-size 16 --batch 2 --context 700 --prefix-tokens 256 \
            --repeats 1 || STATUS=1
        grep -E "ERROR SUMMARY|Invalid" "$LOGS/memcheck.log" | head -5 | tee -a "$SUMMARY"
    else
        say "memcheck: skipped (compute-sanitizer absent or not the CUDA backend)"
        TABLE+="$(printf '%-12s %6s %6s  %s' memcheck skip 0 'absent')"$'\n'
    fi
fi

# --- 7. the logs, in one file -------------------------------------------------------------------
tar -czf "$OUT/logs-$TAG.tar.gz" -C "$BUILD" device-logs 2>> "$SUMMARY"

# --- the summary last: the device tool returns the end of the output ---------------------------
{
    echo
    echo "== stages (exit status, seconds; budget ${BUDGET}s, used $((SECONDS - T0))s)"
    printf '%-12s %6s %6s\n' stage exit secs
    printf '%s' "$TABLE"
    if [ -s "$OUT/bench-$TAG.jsonl" ]; then
        echo "== bench rows ($(wc -l < "$OUT/bench-$TAG.jsonl") finished)"
        grep -h '^format\|^\[row' "$LOGS/bench.log" | sed 's/^\[row [0-9]*\/[0-9]*\] //' | awk '!seen[$0]++'
    fi
    echo "== files in $OUT"
    ls -l "$OUT" | tail -n +2
    echo "== device-check: status $STATUS ($BACKEND, $TAG)"
} 2>&1 | tee -a "$SUMMARY"
exit $STATUS
