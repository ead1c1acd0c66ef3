#!/bin/bash
# scripts/nvidia-run.sh - the whole NVIDIA run of issue 19 in one command, for the lent NVIDIA
# machine (one H200, CUDA 13.0, driver 580, Ubuntu 24.04: no package registry, no ROCm, no
# json-c or Criterion). Run from the repository root:
#
#   scripts/nvidia-run.sh              # OUT=<folder> for the results (default: ./nvidia-run-out)
#   scripts/nvidia-run.sh --fetch-debs # on a Debian 12 machine with a registry: fills .nvdeb/
#   NV_MOCK=1 scripts/nvidia-run.sh    # a rehearsal without a GPU: every step against
#                                      # tools/cuda-mock (HSAD_LIBCUDA; timings mean nothing)
#
# Carry (git-ignored, 4.1 MiB): .nvdeb/ - the Debian 12 packages of
# shared/notes/nvidia-machine.md (Criterion, json-c, libelf, msgpack, zlib, zstd and their
# dependencies), unpacked here with dpkg -x into /tmp (never into /).
#
# Steps (each one's command, exit status, time and whole output go to $OUT/<step>.txt; a
# failed step's output is also printed here, its last 60 lines): facts of the machine, unpack,
# build with `make BACKENDS=nvidia` (no ROCm header or library anywhere: checked from the
# compiler's dependency files), hsad info (text and --json), the driver API declarations
# against this machine's cuda.h (tests/test_nv_decls.c), the NVIDIA tests (tests/test_nvidia.c,
# one process per test), hsad run on the GPU (tests/test_nvidia_run.c: a .cu source through NVRTC,
# cubin, fatbin, PTX, exact outputs; then saxpy and a by-value struct shown as text and --json),
# spill-aware variants of nv_variants.cu's heavy (hsad run --variants: the rule at 1024 threads,
# auto measured at 256), hsad graph (examples/nv-fork-join.json as one CUDA graph, 100 launches), hsad run --trace
# (a monitored profiling stream in the NVIDIA-only build: the trace checked with python3),
# the bench (hsad-bench-nvidia, every suite in one run: dispatch, roundtrip, barrier, pool, copy,
# pageable, timing, graph, producers; --json $OUT/bench.jsonl, --plot $OUT/plots: PNGs where
# gnuplot is installed, else its scripts and data), README's tables from that one JSON file
# ($OUT/bench-tables.md, scripts/nv-bench-table.py). Every step runs
# even when an earlier one failed where it can. The last lines are $OUT/summary.txt: one line
# per step, PASS / FAIL / SKIP, and the totals. Exit status: 0 when every step passed.
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
DEBS=(libcriterion-dev libcriterion3 libboxfort-dev libnanomsg5 libnanomsg-dev libgit2-1.5
      libgit2-dev libffi-dev libffi8 libjson-c-dev libjson-c5 libelf-dev libelf1 zlib1g-dev
      libmsgpack-dev libmsgpackc2 libhttp-parser2.9 libssh2-1 libmbedtls14 libmbedx509-1
      libmbedcrypto7 libzstd-dev)

if [ "${1:-}" = "--fetch-debs" ]; then
  mkdir -p .nvdeb && cd .nvdeb && apt-get download "${DEBS[@]}" && ls -l && exit 0
  exit 1
fi

OUT=${OUT:-$ROOT/nvidia-run-out}
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"
BUILD=${NV_BUILD:-build-nv}
JOBS=${NV_JOBS:-$(nproc 2>/dev/null || echo 4)}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
failed=0
t_start=$(date +%s)

note() { echo "$*" | tee -a "$SUMMARY"; }

# run_step NAME TIMEOUT_S CMD...: runs CMD with a deadline; records and reports it.
run_step() {
  local name=$1 limit=$2
  shift 2
  local log=$OUT/$name.txt t0 t1 rc
  t0=$(date +%s.%N)
  {
    echo "\$ $*"
    echo "(cwd $PWD; started $(date -u +%FT%TZ))"
  } > "$log"
  if declare -F "$1" > /dev/null; then
    "$@" >> "$log" 2>&1 # a function of this script (short; `timeout` cannot run it)
  else
    timeout --kill-after=10 "$limit" "$@" >> "$log" 2>&1
  fi
  rc=$?
  t1=$(date +%s.%N)
  local secs
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  echo "(exit $rc after ${secs} s)" >> "$log"
  if [ $rc -eq 0 ]; then
    note "PASS  $name (${secs} s): $*"
  else
    failed=$((failed + 1))
    [ $rc -eq 124 ] && note "FAIL  $name: timed out after ${limit} s: $*" ||
      note "FAIL  $name (exit $rc, ${secs} s): $*"
    echo "----- last 60 lines of $name ($log) -----"
    tail -n 60 "$log"
    echo "----- end of $name -----"
  fi
  return $rc
}

echo "nvidia-run: results in $OUT (summary: $SUMMARY)"
echo "nvidia-run: commit $(git rev-parse --short HEAD 2>/dev/null || echo '?') on $(hostname)"

# ---- 1. the machine ----------------------------------------------------------------------
{
  echo "date: $(date -u +%FT%TZ)"
  echo "uname: $(uname -a)"
  echo "os: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
  echo "gcc: $(gcc --version 2>&1 | head -n 1)"
  echo "cores: $JOBS"
  echo "nvcc: $("$CUDA_HOME/bin/nvcc" --version 2>&1 | tail -n 2 | tr '\n' ' ')"
  echo "cuda.h: $(ls "$CUDA_HOME/include/cuda.h" 2>&1)"
  echo "libcuda: $(ldconfig -p 2>/dev/null | grep -m 2 libcuda.so)"
  echo "driver: $(cat /sys/module/nvidia/version 2>/dev/null || head -n 1 /proc/driver/nvidia/version 2>&1)"
  echo "devices: $(ls /dev/nvidia* 2>&1 | tr '\n' ' ')"
  echo "nvidia-smi: $(nvidia-smi --query-gpu=name,compute_cap,memory.total,pci.bus_id --format=csv,noheader 2>&1)"
  echo "rocm headers: $(ls /usr/include/hsa/hsa.h /opt/rocm/include/hsa/hsa.h 2>&1 | tr '\n' ' ')"
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
NV_ARCH=${NV_ARCH:-}
if [ -z "$NV_ARCH" ]; then
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .')
  NV_ARCH=sm_${cc:-90}
fi
echo "nvidia-run: kernels for $NV_ARCH"

# ---- 2. the carried packages ---------------------------------------------------------------
P=/tmp/hsad-nvdeb
unpack() {
  local n=0
  rm -rf "$P" && mkdir -p "$P" || return 1
  for d in "${DEBS[@]}"; do
    local f
    f=$(ls "$ROOT"/.nvdeb/"${d}"_*.deb 2>/dev/null | head -n 1)
    if [ -z "$f" ]; then echo "missing: .nvdeb/${d}_*.deb (carry .nvdeb; fill it with --fetch-debs)"; return 1; fi
    dpkg -x "$f" "$P" || { echo "dpkg -x $f failed"; return 1; }
    echo "unpacked $(basename "$f")"
    n=$((n + 1))
  done
  echo "$n packages into $P"
  ls "$P/usr/include/criterion/criterion.h" "$P/usr/include/json-c/json.h" || return 1
}
run_step unpack 120 unpack
export CPATH="$P/usr/include${CPATH:+:$CPATH}"
export LIBRARY_PATH="$P/usr/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}"
export LD_LIBRARY_PATH="$P/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# ---- 3. build without ROCm -----------------------------------------------------------------
CUBIN=$BUILD/tests/nvidia/nv_kernels-$NV_ARCH.cubin
TARGETS=("$BUILD/lib/libhsad.a" "$BUILD/lib/libhsad.so" "$BUILD/bin/hsad"
         "$BUILD/bin/hsad-bench-nvidia" "$BUILD/tests/test_nv_decls" "$BUILD/tests/test_nvidia"
         "$BUILD/tests/test_nvidia_run" "$CUBIN" "$BUILD/tests/nvidia/nv_kernels.fatbin"
         "$BUILD/tests/nvidia/nv_kernels.ptx")
NV_TEST=$BUILD/tests/test_nvidia
if [ -n "${NV_MOCK:-}" ]; then # the rehearsal: the mock driver, built here
  # test_nvidia_mock: test_nvidia.c with the mock's kernel list (every mock module has 9)
  NV_TEST=$BUILD/tests/test_nvidia_mock
  TARGETS+=("$BUILD/lib/hsad/cuda-mock/libcuda.so.1" "$NV_TEST")
  export HSAD_LIBCUDA=$ROOT/$BUILD/lib/hsad/cuda-mock/libcuda.so.1
  note "NOTE  NV_MOCK=1: every step runs against tools/cuda-mock ($HSAD_LIBCUDA), not a GPU"
fi
run_step build 240 make -j"$JOBS" BUILD="$BUILD" BACKENDS=nvidia NV_ARCH="$NV_ARCH" \
  CUDA_HOME="$CUDA_HOME" "${TARGETS[@]}"
# the proof that nothing of ROCm was compiled in: the dependency files of every object
no_rocm() {
  local hits
  hits=$(grep -l 'hsa/\|amd_comgr\|hsakmt' $(find "$BUILD/obj" -name '*.d') 2>/dev/null)
  echo "objects: $(find "$BUILD/obj" -name '*.o' | sed "s|$BUILD/obj/||" | sort | tr '\n' ' ')"
  echo "undefined hsa_* symbols in libhsad.a: $(nm "$BUILD/lib/libhsad.a" 2>/dev/null | grep -c ' U hsa_')"
  echo "libhsad.so needs: $(readelf -d "$BUILD/lib/libhsad.so" 2>/dev/null | grep NEEDED | sed 's/.*\[\(.*\)\]/\1/' | tr '\n' ' ')"
  [ -z "$hits" ] || { echo "ROCm headers used by: $hits"; return 1; }
  echo "no ROCm header in any dependency file"
}
run_step no-rocm 30 no_rocm

# ---- 4. hsad info ----------------------------------------------------------------------------
run_step info 60 "$BUILD/bin/hsad" info
run_step info-json 60 "$BUILD/bin/hsad" info --json

# ---- 5. tests --------------------------------------------------------------------------------
# one process per test (Criterion's default); --jobs=1 so the 4-thread and fault tests own the GPU
run_step test-nv-decls 60 "$BUILD/tests/test_nv_decls" --verbose
run_step test-nvidia 300 "$NV_TEST" --verbose --jobs=1
if [ -f "$OUT/test-nvidia.txt" ]; then
  p=$(grep -a -c '^\[PASS\]' "$OUT/test-nvidia.txt")
  f=$(grep -a -c '^\[FAIL\]' "$OUT/test-nvidia.txt")
  s=$(grep -a -c '^\[SKIP\]' "$OUT/test-nvidia.txt")
  note "      test_nvidia: $p passed, $f failed, $s skipped"
  if [ "$s" -gt 0 ] || [ "$p" -eq 0 ]; then # on the NVIDIA machine every test must run
    failed=$((failed + 1))
    note "FAIL  test-nvidia: $s test(s) skipped, $p passed: on this machine every test must run"
  fi
  grep -a '^\[FAIL\]\|^\[SKIP\]\|Assertion\|^\[----\].*:' "$OUT/test-nvidia.txt" | head -n 40 | tee -a "$SUMMARY"
fi

# ---- 6. hsad run on the GPU ------------------------------------------------------------------
run_step test-nvidia-run 180 "$BUILD/tests/test_nvidia_run" --verbose --jobs=1
if [ -f "$OUT/test-nvidia-run.txt" ]; then
  p=$(grep -a -c '^\[PASS\]' "$OUT/test-nvidia-run.txt")
  f=$(grep -a -c '^\[FAIL\]' "$OUT/test-nvidia-run.txt")
  s=$(grep -a -c '^\[SKIP\]' "$OUT/test-nvidia-run.txt")
  note "      test_nvidia_run: $p passed, $f failed, $s skipped"
  if [ "$s" -gt 0 ] || [ "$p" -eq 0 ]; then
    failed=$((failed + 1))
    note "FAIL  test-nvidia-run: $s test(s) skipped, $p passed: on this machine every test must run"
  fi
  grep -a '^\[FAIL\]\|^\[SKIP\]\|Assertion\|^\[----\].*:' "$OUT/test-nvidia-run.txt" | head -n 40 | tee -a "$SUMMARY"
fi
# what a user sees, checked: saxpy from the source (2^20 + 3 floats: 2.5 i + 1 is exact in f32),
# a by-value struct as --json (every field back)
expect() { # expect STEP TEXT: the step's output holds TEXT
  if grep -aqF -- "$2" "$OUT/$1.txt" 2>/dev/null; then
    note "PASS  $1: output holds: $2"
  else
    failed=$((failed + 1))
    note "FAIL  $1: output lacks: $2"
  fi
}
NVDEV=$("$BUILD/bin/hsad" info --json 2>/dev/null | tr ',' '\n' | grep -m 1 -B 1 '"vendor": "nvidia"' | grep -o '"index": [0-9]*' | grep -o '[0-9]*$')
NVDEV=${NVDEV:-0}
run_step run-saxpy 60 "$BUILD/bin/hsad" run tests/data/nvidia/nv_run.cu saxpy --device "$NVDEV" \
  -DHSAD_RUN_TEST -Itests/data/nvidia/include --grid 1048579 --block 256 --arg f32:2.5 \
  --arg buf:f32:1048579:iota --arg buf:f32:1048579:const=1:out --arg u32:1048579
[ -f "$OUT/run-saxpy.txt" ] && grep -a '^device\|^compiled\|^kernel\|^occupancy\|^timings\|^arg' "$OUT/run-saxpy.txt" | sed 's/^/      /' | tee -a "$SUMMARY"
expect run-saxpy "arg 2 (f32 x 1048579): sum 1.37439714e+12, min 1, max 2621446, first: 1 3.5 6 8.5 11 13.5 16 18.5"
run_step run-byval-json 60 "$BUILD/bin/hsad" run tests/data/nvidia/nv_run.cu byval --device "$NVDEV" \
  -DHSAD_RUN_TEST -Itests/data/nvidia/include --grid 1 --arg i8:-3 \
  --arg hex:07002c01fbffffff000000000000f43f0102030000000000 --arg f32:1.5,2,-3,4 \
  --arg f64:0.125 --arg u64:123456789012 --arg buf:i64:12:out --json
[ -f "$OUT/run-byval-json.txt" ] && grep -a -o '"buffers": \[[^]]*\][^]]*\]' "$OUT/run-byval-json.txt" | sed 's/^/      /' | tee -a "$SUMMARY"
expect run-byval-json '"sum": 123456800934, "first": [ -3, 7, 300, -5, 1250, 10203, 15, 20 ]'

# spill-aware variants (issue 22): nv_variants.cu's heavy (103 registers as written with NVRTC
# 13.0) built as written, at 64 and 32 registers and __launch_bounds__(256, 4) as JIT options;
# the rule's choice at 1024 threads, and --variants auto at 256 (each variant timed by device
# events, the fastest run): which wins by time, not only by occupancy
VN=1048576 VK=64 # the mock runs heavy on the host: fewer threads and steps there
[ -n "${NV_MOCK:-}" ] && VN=65536 VK=4
run_step variants-1024 120 "$BUILD/bin/hsad" run tests/data/nvidia/nv_variants.cu heavy \
  --device "$NVDEV" --grid $VN --block 1024 --arg buf:u32:$VN:iota \
  --arg buf:u32:$VN:out --arg u32:$VN --arg u32:$VK --variants 0:0,r64,r32,256:4
[ -f "$OUT/variants-1024.txt" ] && grep -a '^variants\|^  variant\|^rule\|^choice\|^kernel\|^timings' "$OUT/variants-1024.txt" | sed 's/^/      /' | tee -a "$SUMMARY"
expect variants-1024 "rule: variant "
run_step variants-auto-256 120 "$BUILD/bin/hsad" run tests/data/nvidia/nv_variants.cu heavy \
  --device "$NVDEV" --grid $VN --block 256 --arg buf:u32:$VN:iota \
  --arg buf:u32:$VN:out --arg u32:$VN --arg u32:$VK --variants auto --repeat 20
[ -f "$OUT/variants-auto-256.txt" ] && grep -a '^variants\|^  variant\|^rule\|^choice\|^kernel\|^timings' "$OUT/variants-auto-256.txt" | sed 's/^/      /' | tee -a "$SUMMARY"
expect variants-auto-256 "choice: variant "

# hsad graph on the GPU: the fork/join example as one CUDA graph, 100 launches, checks held
run_step graph-fork-join 60 "$BUILD/bin/hsad" graph examples/nv-fork-join.json --device "$NVDEV" \
  --launches 100
[ -f "$OUT/graph-fork-join.txt" ] && grep -a '^graph\|^  ' "$OUT/graph-fork-join.txt" | sed 's/^/      /' | tee -a "$SUMMARY"
expect graph-fork-join "6 nodes on 2 queue(s), 100 launch(es), path: fused"
expect graph-fork-join "check out: 5 elements OK"

# hsad run --trace on the GPU (monitoring in the NVIDIA-only build, issue 22): 300 dispatches of
# saxpy on a profiling stream, drained every 64; the trace must hold 300 dispatch slices with
# device durations, 300 submit slices and one queue track
run_step run-trace 60 "$BUILD/bin/hsad" run tests/data/nvidia/nv_run.cu saxpy --device "$NVDEV" \
  -DHSAD_RUN_TEST -Itests/data/nvidia/include --grid 65536 --block 256 --arg f32:2.5 \
  --arg buf:f32:65536:iota --arg buf:f32:65536:const=1:out --arg u32:65536 --repeat 300 \
  --trace "$OUT/run-trace.json"
trace_check() { # the trace's slices counted by category and phase
  python3 - "$OUT/run-trace.json" "${NV_MOCK:-}" <<'PYEOF'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
disp = [e for e in ev if e.get("ph") == "X" and e.get("name") == "saxpy"]
sub = [e for e in ev if e.get("ph") == "X" and e.get("name") == "submit saxpy"]
flows = [e for e in ev if e.get("ph") == "f"]
tracks = [e["args"]["name"] for e in ev if e.get("ph") == "M" and "QUEUE" in e["args"].get("name", "")]
dur = sorted(e["dur"] for e in disp)
print("trace: %d dispatch slices, %d submit slices, %d flows, queue tracks %s" % (len(disp), len(sub), len(flows), tracks))
if dur:
    print("trace: saxpy device us min %.3f median %.3f max %.3f" % (dur[0], dur[len(dur) // 2], dur[-1]))
mock = bool(sys.argv[2])  # the mock's events may read 0 us apart; a GPU's never for 65,536 elements
ok = len(disp) == 300 and len(sub) == 300 and len(flows) == 300 and len(tracks) == 1 and \
    all(d > 0 or (mock and d == 0) for d in dur)
print("trace check:", "OK" if ok else "FAILED (want 300 saxpy slices with device durations > 0, 300 submit slices, 300 flows, 1 queue track)")
sys.exit(0 if ok else 1)
PYEOF
}
run_step run-trace-check 30 trace_check
[ -f "$OUT/run-trace-check.txt" ] && grep -a '^trace' "$OUT/run-trace-check.txt" | sed 's/^/      /' | tee -a "$SUMMARY"

# ---- 7. bench --------------------------------------------------------------------------------
# every suite in one run (the default --suites), its JSON lines and plots
run_step bench 420 "$BUILD/bin/hsad-bench-nvidia" "$CUBIN" --rounds 7 --count 20000 \
  --json "$OUT/bench.jsonl" --plot "$OUT/plots"
[ -f "$OUT/bench.txt" ] && grep -a '^dispatch\|^roundtrip\|^barrier\|^pool\|^copy\|^pageable  [HD]2[DH] [0-9]\|^graph\|^timing\|^producers\|^cost\|^target\|^plot\|^hsad-bench-nvidia on\|^hsad-bench-nvidia: no' "$OUT/bench.txt" | tee -a "$SUMMARY"
# README's NVIDIA tables from that one run
run_step bench-tables 30 python3 scripts/nv-bench-table.py "$OUT/bench.jsonl"
[ -f "$OUT/bench-tables.txt" ] && sed -n '3,$p' "$OUT/bench-tables.txt" | grep -v '^(exit' > "$OUT/bench-tables.md"
if grep -aq 'no NVIDIA' "$OUT/bench.txt" 2>/dev/null; then
  failed=$((failed + 1))
  note "FAIL  bench: it found no NVIDIA GPU"
fi

# ---- summary ---------------------------------------------------------------------------------
note "nvidia-run: $failed step(s) failed, $(($(date +%s) - t_start)) s in all; every step's output is in $OUT"
echo "===== summary ($SUMMARY) ====="
cat "$SUMMARY"
[ $failed -eq 0 ]
