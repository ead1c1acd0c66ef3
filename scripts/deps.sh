#!/bin/sh
# Installs what hsa-dispatch needs on Debian 12 (bookworm). Idempotent and quiet:
# a no-op when every package is already present.
#   scripts/deps.sh            what make, make test and the tools need
#   scripts/deps.sh coverage   that and gcovr (make coverage's report; make test does not need it)
set -eu
PKGS="make gcc g++ python3 pkg-config libhsa-runtime-dev libhsakmt-dev libamd-comgr-dev rocm-device-libs \
hipcc libamdhip64-dev libelf-dev libnuma-dev libcriterion-dev libmsgpack-dev \
clang-15 lld-15 llvm-15 valgrind librocrand1 zlib1g-dev libzstd-dev \
libjson-c-dev gnuplot-nox file pocl-opencl-icd ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers"
[ "${1:-}" = coverage ] && PKGS="$PKGS gcovr"
missing=""
for p in $PKGS; do
  st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  case "$st" in *"install ok installed"*) ;; *) missing="$missing $p" ;; esac
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing"
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
