#!/usr/bin/env bash
# Proves that a complete bundle (scripts/device_bundle.sh without --target) is all a machine
# without our Debian packages needs: in a mount namespace, an overlay over /usr hides every
# file of the packages in scripts/device_groups.txt and every library the bundle carries
# (except those some program in /usr/bin or /usr/sbin loads: the base system needs them),
# then scripts/gpu_check.sh builds and runs its tests against the bundle alone. Without a
# GPU here it builds without CUDA and its GPU steps skip.
#
#   sudo scripts/prove_device_bundle.sh [BUNDLE_DIR]    # default .device-bundle-full
#
# Root is needed (unshare, mount). Results: build-prove/out/summary.md. About 15 minutes on
# 2 cores, most of it the build.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
bundle="$(realpath "${1:-.device-bundle-full}")/bundle.tar.xz"
[ -f "$bundle" ] || { echo "prove_device_bundle: no $bundle: run scripts/device_bundle.sh --out ${1:-.device-bundle-full}" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
upper="$work/upper"
mkdir -p "$upper" "$work/overlay-work"

hide() {  # an overlay whiteout (a 0/0 character device) hides the file below it
  local file="$1"
  [ -e "$file" ] || [ -L "$file" ] || return 0
  [ -d "$file" ] && [ ! -L "$file" ] && return 0
  local rel="${file#/usr/}"
  mkdir -p "$upper/$(dirname "$rel")"
  [ -e "$upper/$rel" ] || mknod "$upper/$rel" c 0 0
}

packages=$(grep -v '^#' scripts/device_groups.txt | cut -d'|' -f2)
for package in $packages; do
  { dpkg -L "$package" 2>/dev/null || true; } | { grep '^/usr/' || true; } |
    while read -r file; do hide "$file"; done
done
# Debian's alternatives links that lead into those packages.
for file in /usr/bin/mpicc /usr/bin/mpicxx /usr/bin/mpirun /usr/bin/mpiexec \
  /usr/lib/x86_64-linux-gnu/libopenblas.so.0 /usr/lib/x86_64-linux-gnu/libopenblas.so \
  /usr/lib/x86_64-linux-gnu/libblas.so.3 /usr/lib/x86_64-linux-gnu/liblapack.so.3 \
  /usr/include/x86_64-linux-gnu/cblas.h; do
  hide "$file"
done
for program in /usr/bin/* /usr/sbin/*; do
  { ldd "$program" 2>/dev/null || true; } | awk '$2 == "=>" && $3 ~ /^\// {print $3}'
done | xargs -r readlink -f | sort -u >"$work/keep.txt"
hidden=0
while read -r name; do
  for file in /usr/lib/x86_64-linux-gnu/"$name"*; do
    [ -e "$file" ] || continue
    grep -qxF "$(readlink -f "$file")" "$work/keep.txt" && continue
    hide "$file"
    hidden=$((hidden + 1))
  done
done < <(xz -dc "$bundle" | tar -t | { grep 'deps/runtime/usr/lib/x86_64-linux-gnu/.' || true; } |
  xargs -r -n1 basename)
echo "prove_device_bundle: hiding the packages' files and $hidden of the bundle's libraries"

out="$root/build-prove/out"
rm -rf "$root/build-prove" "$root/build-gpu"
mkdir -p "$out"
status=0
unshare -m bash -c "
  mount -t overlay overlay -o lowerdir=/usr,upperdir=$upper,workdir=$work/overlay-work /usr
  DOPPIO_DEVICE_BUNDLE='$bundle' DOPPIO_GPU_CHECK_SECONDS=5000 \
    DOPPIO_GPU_CHECK_CMAKE_ARGS=-DDOPPIO_CUDA=OFF scripts/gpu_check.sh '$out'
" || status=$?
rm -rf "$root/build-gpu"
echo "prove_device_bundle: gpu_check exit $status; summary in $out/summary.md"
exit "$status"
