#!/usr/bin/env bash
# The CUDA compiler launcher of the kernel objects (gpu_probe/CMakeLists.txt): runs the nvcc
# command it is given (which has -Xptxas -v) and keeps ptxas's resource report next to the
# object, as OBJECT.ptxas.txt, for the ptxas_resources ctest. The build log shows only what is
# not ptxas's report (warnings, errors); a failing command's whole output. The exit status is
# nvcc's. Every argument is passed on quoted, so paths with spaces work.
set -u
out="" prev=""
for arg in "$@"; do
  [ "$prev" = "-o" ] && out="$arg"
  prev="$arg"
done
log="${out:-nvcc}.ptxas.txt"
mkdir -p "$(dirname "$log")"
"$@" > "$log.tmp" 2>&1
rc=$?
if [ "$rc" -ne 0 ]; then
  cat "$log.tmp" >&2
else
  grep -v -e '^ptxas info' -e '^ *[0-9]* bytes stack frame' "$log.tmp" >&2 || true
fi
mv -f "$log.tmp" "$log"
exit "$rc"
