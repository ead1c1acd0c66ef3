#!/bin/bash
# mutation.sh - the mutation check (`make mutation`, issue 12): applies each deliberate bug of
# tests/mutation/*.patch, one at a time, to a private copy of the tree and requires the tests
# to fail on it.
#
#   scripts/mutation.sh [--all] [PATCH...]   run the given patches (a path, a name or its
#                                            start, e.g. 11; default: every one)
#   scripts/mutation.sh --check              only check that every patch applies (no build)
#
# The copy is the working tree as it is (HEAD plus uncommitted and untracked, not ignored
# files, modification times kept) in a temporary directory, with the build directory
# ($BUILD, default build) copied beside it, so make rebuilds only what a patch touches: one
# object, libhsad.a and the test binaries linking it. The user's tree is never written.
# For each patch: apply, build, run the test binaries of $MUTATION_TESTS in order with the
# environment of scripts/run-tests.sh (every kfd-emu strict mode, KFD_EMU_READ_INDEX=launch),
# each under a deadline of $MUTATION_TIMEOUT seconds (default 120); the first binary that fails
# catches the mutation (--all: run every binary and list them all). Then the patch is
# reverted. The unmutated tests run first and must pass (else exit 2).
# Prints one line per patch, CAUGHT (binary: failed tests) or SURVIVED, then
# `mutation score: N/M caught`; exits 1 if a mutation survived or a build failed.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build}
timeout_s=${MUTATION_TIMEOUT:-120}
# Every binary that drives the dispatch path (hsad_queue.h's submit contract): the ring object on
# host memory first (milliseconds: it catches the ring's own mutations), the dispatch
# tests, queue options (kernarg_block_size, batches at the ring's limits), the public-behaviour
# tests (hsad_buffer_alloc's access grant), variant sets (hsad_variant_dispatch), monitoring
# (records from the submit path), fusion, memory (copies ordered with barriers), and the tests
# written for make mutation-sample's survivors (test_survivors), last the launch cache's
# seeded differential test (test_dispatch_fuzz, ~1 s). All of them together take
# about 20 s unmutated. Each mutant's build relinks build/bin/hsad too (it is always among the
# targets; test_fusion's rule depends on it as well), so the tests that run the CLI see the
# mutant: test_fusion's fusion_cli tests (hsad graph) do by default; test_dispatch_cli and
# test_cli_docs would as well, but are left out to keep each mutant's run short (add them with
# MUTATION_TESTS). Left out too: codeobj, kfd-emu, twins and HIP tests (no libhsad submit
# path), test_dispatch_tsan (`make tsan`, its own build).
tests=${MUTATION_TESTS:-test_aql_ring test_dispatch test_dispatch_contract test_dispatch_timeline \
test_dispatch_mt test_dispatch_queue_opts test_dispatch_public test_dispatch_variants \
test_monitor test_fusion test_fusion_order test_fusion_capture test_memory test_memory_async \
test_memory_copy test_memory_pool test_memory_pageable test_memory_stream test_memory_rect \
test_survivors test_dispatch_fuzz}
# Opt-in binaries: built and run only for a patch whose `Tests:` line names them (and once
# unmutated, when such a patch is among those run): the NVIDIA backend's tests against
# tools/cuda-mock (test_nvidia_mock: graphs, lazy epochs and pageable staging on NVIDIA), which
# no AMD mutant can reach, test_codeobj_errors (malformed code objects: what codeobj/ refuses
# before ROCr's loader sees it) and test_dispatch_cli (hsad run's own checks and outputs).
optin=${MUTATION_OPTIN_TESTS:-test_nvidia_mock test_codeobj_errors test_dispatch_cli}
all=0 check=0 patches=()
for a in "$@"; do
  case $a in
  --all) all=1 ;;
  --check) check=1 ;;
  -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) echo "mutation.sh: unknown option '$a'" >&2; exit 2 ;;
  *) if [ ! -f "$a" ]; then   # a name or its start: 11, 11-batch-doorbell-first-id
       m=("$root"/tests/mutation/"$(basename "$a" .patch)"*.patch)
       [ ${#m[@]} = 1 ] && [ -f "${m[0]}" ] ||
         { echo "mutation.sh: no single patch '$a' in tests/mutation" >&2; exit 2; }
       a=${m[0]}
     fi
     patches+=("$(cd "$(dirname "$a")" && pwd)/$(basename "$a")") ;;
  esac
done
[ ${#patches[@]} -gt 0 ] || patches=("$root"/tests/mutation/*.patch)

if [ $check = 1 ]; then
  stale=0
  for p in "${patches[@]}"; do
    if ! out=$(cd "$root" && git apply --check "$p" 2>&1); then
      echo "STALE $(basename "$p"): $out"; stale=$((stale + 1))
    fi
  done
  echo "${#patches[@]} patches, $stale stale"
  [ $stale = 0 ]; exit
fi

start=$(date +%s)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hsad-mutation.XXXXXX") || exit 2
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
src=$tmp/src
mkdir -p "$src"
# The working tree's files (tracked ones that exist, untracked ones not ignored), times kept.
(cd "$root" && git ls-files -z --cached --others --exclude-standard |
   while IFS= read -r -d '' f; do [ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"; done |
   tar --null -T - -cf -) | tar -xf - -C "$src" || { echo "mutation.sh: copy failed" >&2; exit 2; }
if [ -d "$root/$build" ]; then
  cp -a "$root/$build" "$src/build"
  # test binaries carry the tree's path (TEST_KERNDIR, HSAD_SRCDIR): rebuild them in the copy
  for t in $tests; do rm -f "$src/build/tests/$t"; done
fi
have=""; bins=()
for t in $tests; do   # binaries whose source exists in this tree
  [ -f "$src/tests/$t.c" ] && { have="$have $t"; bins+=("build/tests/$t"); }
done
tests=${have# }
named=" $(for p in "${patches[@]}"; do sed -n 's/^Tests: *//p' "$p" | head -n 1; done | tr '\n' ' ') "
have=""
for t in $optin; do # opt-in binaries some patch names, whose source exists in this tree
  case $named in
  *" $t "*) [ -f "$src/tests/$t.c" ] &&
            { have="$have $t"; bins+=("build/tests/$t"); rm -f "$src/build/tests/$t"; } ;;
  esac
done
optin=${have# }
bins+=(build/bin/hsad) # the CLI the tests above may run, relinked with each mutant
log=$tmp/log
mk() { (cd "$src" && make -j2 --no-print-directory BUILD=build "$@") > "$log.make" 2>&1; }
echo "mutation: copy in $src; building the unmutated tree" >&2
if ! mk all "${bins[@]}"; then
  tail -n 30 "$log.make"; echo "mutation.sh: the unmutated tree does not build" >&2; exit 2
fi

export LD_LIBRARY_PATH="$src/build/lib/hsad/kfd-emu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KFD_EMU_DOORBELL_GRACE_MS="${KFD_EMU_DOORBELL_GRACE_MS:-strict}"
export KFD_EMU_ACCESS="${KFD_EMU_ACCESS:-strict}"
export KFD_EMU_PUBLICATION_CHECK_US="${KFD_EMU_PUBLICATION_CHECK_US:-2}"
export KFD_EMU_READ_INDEX="${KFD_EMU_READ_INDEX:-launch}"

# run_tests [BINARY...]: runs the binaries (default: every one of $tests); prints
# "binary: failed tests" for each failing one.
run_tests() {
  local caught=0 t
  for t in ${*:-$tests}; do
    (cd "$src" && timeout -k 5 "$timeout_s" "build/tests/$t" --jobs=2) > "$log.$t" 2>&1
    local r=$?
    if [ $r -ne 0 ]; then
      local why
      # the first three failed tests, then how many more
      why=$(grep -a -o '\[FAIL\] [^:]*::[^: ]*' "$log.$t" | sed 's/\[FAIL\] //' | sort -u |
            awk 'NR <= 3 { printf "%s ", $0 } END { if (NR > 3) printf "(+%d more) ", NR - 3 }')
      [ $r -ge 124 ] && why="${why}(exit $r: deadline ${timeout_s} s)"
      [ -n "$why" ] || why="(exit $r)"
      echo "$t: $why"
      caught=1
      [ $all = 1 ] || return 0
    fi
  done
  return 0
}

echo "mutation: unmutated run of: $tests${optin:+ (opt-in: $optin)}" >&2
base=$(run_tests $tests $optin)
if [ -n "$base" ]; then
  echo "$base"; echo "mutation.sh: the unmutated tests fail; fix them first" >&2; exit 2
fi

n=0 caught=0 survived=() broken=()
for p in "${patches[@]}"; do
  name=$(basename "$p" .patch)
  n=$((n + 1))
  t0=$(date +%s)
  if ! (cd "$src" && git apply "$p") > "$log.apply" 2>&1; then
    echo "STALE     $name: $(head -n 3 "$log.apply" | tr '\n' ' ')"; broken+=("$name"); continue
  fi
  # A patch may name the binaries that execute the code it changes (a line `Tests: a b`:
  # make mutation-sample writes it from make coverage's per-test counters); only those of
  # $tests are built and run for it, the others cannot see the change.
  run=() run_bins=() want=" $(sed -n 's/^Tests: *//p' "$p" | head -n 1) "
  for t in $tests $optin; do
    case $want in *" $t "*) run+=("$t"); run_bins+=("build/tests/$t") ;; esac
  done
  [ ${#run[@]} -gt 0 ] || { run=($tests); run_bins=("${bins[@]}"); }
  if ! mk "${run_bins[@]}"; then
    echo "NO BUILD  $name: $(grep -a -m 3 'error' "$log.make" | tr '\n' ' ')"
    broken+=("$name")
  else
    res=$(run_tests "${run[@]}")
    if [ -n "$res" ]; then
      caught=$((caught + 1))
      echo "CAUGHT    $name ($(( $(date +%s) - t0 )) s) by $(echo "$res" | head -n 1)"
      echo "$res" | tail -n +2 | sed 's/^/            also /'
    else
      echo "SURVIVED  $name ($(( $(date +%s) - t0 )) s)"; survived+=("$name")
    fi
  fi
  (cd "$src" && git apply -R "$p") > "$log.apply" 2>&1 ||
    { echo "mutation.sh: cannot revert $name" >&2; exit 2; }
done
echo "mutation score: $caught/$n caught ($(( $(date +%s) - start )) s)"
[ ${#survived[@]} = 0 ] && [ ${#broken[@]} = 0 ]
