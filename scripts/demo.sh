#!/bin/sh
# demo.sh HSAD - the main job end to end (make demo): compile kernels/saxpy.cl with comgr,
# dispatch it once and as a dependent chain of 10 in-order dispatches on the GPU (kfd-emu when
# there is none), and check every element against a CPU reference. Exit status 1 on a mismatch.
#
# saxpy: y[i] = fma(a, x[i], y[i]). With x = iota, y = 1 and a = 2.5, after R dispatches
# y[i] = 1 + R * 2.5 * i: every intermediate value is a multiple of 0.5 below 2^22, so float32
# holds it exactly and the CPU reference (awk, doubles) must match bit for bit.
set -eu
HSAD=${1:-build/bin/hsad}
N=100000
A=2.5
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

echo "== device"
"$HSAD" info | sed -n '/^GPU/,/nearest/p'

check() { # check FILE REPEAT
  awk -v a="$A" -v r="$2" -v n="$N" '
    { want = 1 + r * a * (NR - 1); if ($1 + 0 != want) { bad++; if (bad <= 5)
        printf "  MISMATCH y[%d] = %s, CPU reference %.9g\n", NR - 1, $1, want } }
    END { if (NR != n) { printf "  expected %d elements, got %d\n", n, NR; exit 1 }
          if (bad) { printf "  %d of %d elements differ\n", bad, n; exit 1 }
          printf "  all %d elements match the CPU reference (y[i] = 1 + %d * %s * i)\n", n, r, a }' "$1"
}

run() { # run REPEAT
  echo
  echo "== saxpy: a = $A, x = iota, y = 1, n = $N, $1 in-order dispatch(es)"
  "$HSAD" run kernels/saxpy.cl saxpy --grid $N --block 256 --arg f32:$A \
    --arg buf:f32:$N:iota --arg buf:f32:$N:const=1:txt="$TMP/y$1.txt" --arg u32:$N \
    --repeat "$1" >"$TMP/run$1.out"
  cat "$TMP/run$1.out"
  check "$TMP/y$1.txt" "$1"
}

status=0
run 1 || status=1
run 10 || status=1
echo
# a small fused pipeline: two saxpys on two queues, then their sum (examples/saxpy-pipeline.json)
echo "== hsad graph examples/saxpy-pipeline.json --launches 100"
"$HSAD" graph "$(dirname "$0")/../examples/saxpy-pipeline.json" --launches 100 || status=1
echo
# hsad run's device line names kfd-emu when the GPU was emulated
if grep -q '^device .*kfd-emu' "$TMP/run1.out" 2>/dev/null; then
  where="on kfd-emu, the emulated GPU (kernels ran as host twins)"
else
  where="on the GPU"
fi
if [ $status -eq 0 ]; then
  echo "demo: OK (compiled with comgr, dispatched through hsa-dispatch $where, results checked)"
else
  echo "demo: FAILED (results differ from the CPU reference)"
fi
exit $status
