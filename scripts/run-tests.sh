#!/bin/bash
# Runs each Criterion test binary with kfd-emu's libhsakmt.so.1 first on the library path and
# prints one closing line with the totals over all binaries.
set -u
emudir=$1; shift
export LD_LIBRARY_PATH="$(cd "$emudir" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# kfd-emu's strict modes (README.md, kfd-emu) are on for the suite unless the caller set them:
# no doorbell grace, only memory mapped to a GPU is reachable, packet bodies re-read 2 us after
# their header was seen valid, and the read index advancing when a packet is launched, before
# its kernel ran (KFD_EMU_READ_INDEX=launch: the HSA latitude; `complete` is the AMD CP of today).
export KFD_EMU_DOORBELL_GRACE_MS="${KFD_EMU_DOORBELL_GRACE_MS:-strict}"
export KFD_EMU_ACCESS="${KFD_EMU_ACCESS:-strict}"
export KFD_EMU_PUBLICATION_CHECK_US="${KFD_EMU_PUBLICATION_CHECK_US:-2}"
export KFD_EMU_READ_INDEX="${KFD_EMU_READ_INDEX:-launch}"
# sanitizer builds: Criterion's own allocations are not leaks of this project (tests/lsan.supp)
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$(cd "$(dirname "$0")/.." && pwd)/tests/lsan.supp}"
echo "kfd-emu: KFD_EMU_DOORBELL_GRACE_MS=$KFD_EMU_DOORBELL_GRACE_MS KFD_EMU_ACCESS=$KFD_EMU_ACCESS" \
  "KFD_EMU_PUBLICATION_CHECK_US=$KFD_EMU_PUBLICATION_CHECK_US KFD_EMU_READ_INDEX=$KFD_EMU_READ_INDEX"
pass=0; fail=0; skip=0; rc=0
for t in "$@"; do
  echo "== $t"
  # sanitizer builds: the tests of raw ROCr and HIP (no libhsad in them) leave ROCr 5.2.3's and
  # HIP's own allocations at exit; every libhsad test keeps the leak check
  case "${t##*/}" in
    test_emu|test_kernels|test_kernels_hip) out=$(ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}" "$t" --jobs=2 2>&1); r=$? ;;
    *) out=$("$t" --jobs=2 2>&1); r=$? ;;
  esac
  # skipped tests (e.g. the NVIDIA tests without an NVIDIA GPU) are counted, with their reason
  # (Criterion counts them in no total: `--list` gives the registered tests, Tested those run)
  listed=$("$t" --list 2>/dev/null | grep -ac '── ')
  echo "$out"
  line=$(echo "$out" | grep -a 'Synthesis: Tested:' | tail -n 1)
  p=$(echo "$line" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
  f=$(echo "$line" | sed -n 's/.*Failing: \([0-9]*\) | Crashing: \([0-9]*\).*/\1 \2/p')
  if [ -z "$p" ]; then fail=$((fail + 1)); rc=1; echo "$t: no Criterion summary (exit $r)"; continue; fi
  pass=$((pass + p)); for x in $f; do fail=$((fail + x)); done
  tested=$(echo "$line" | sed -n 's/.*Tested: \([0-9]*\).*/\1/p')
  if [ -n "$tested" ] && [ "$listed" -gt "$tested" ]; then
    skip=$((skip + listed - tested))
    "$t" --verbose --jobs=2 2>&1 | grep -a '^\[SKIP\]' | head -n 3 | sed 's/^/   /'
    echo "   ($((listed - tested)) of $listed skipped)"
  fi
  [ $r -eq 0 ] || rc=1
done
echo "$pass passed, $fail failed, $skip skipped"
exit $rc
