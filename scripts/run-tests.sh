#!/bin/bash
# Runs each Criterion test binary with kfd-emu's libhsakmt.so.1 first on the library path and
# prints one closing line with the totals over all binaries.
set -u
emudir=$1; shift
export LD_LIBRARY_PATH="$(cd "$emudir" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
pass=0; fail=0; rc=0
for t in "$@"; do
  echo "== $t"
  out=$("$t" --jobs=2 2>&1); r=$?
  echo "$out"
  line=$(echo "$out" | grep -a 'Synthesis: Tested:' | tail -n 1)
  p=$(echo "$line" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
  f=$(echo "$line" | sed -n 's/.*Failing: \([0-9]*\) | Crashing: \([0-9]*\).*/\1 \2/p')
  if [ -z "$p" ]; then fail=$((fail + 1)); rc=1; echo "$t: no Criterion summary (exit $r)"; continue; fi
  pass=$((pass + p)); for x in $f; do fail=$((fail + x)); done
  [ $r -eq 0 ] || rc=1
done
echo "$pass passed, $fail failed"
exit $rc
