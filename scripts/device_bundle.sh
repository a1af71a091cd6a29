#!/usr/bin/env bash
# Gathers the Debian libraries Doppio builds against into one archive that travels to a
# machine without them (a lent GPU machine has CUDA, cuDNN, NCCL and PyTorch, but no package
# manager and only some of our libraries). scripts/gpu_check.sh unpacks it there and uses
# each group only when that machine lacks it.
#
#   scripts/device_bundle.sh [--target FILE] [--out DIR]
#
# The archive, DIR/bundle.tar.xz (default DIR: .device-bundle, ignored by git), holds one
# prefix per group (deps/<group>/usr/...: headers, libraries, CMake files, tools) extracted
# with dpkg -x from the packages installed here, and deps/runtime/: every shared library those
# need at run time that is not part of the C and C++ runtimes (ldd over the groups). A group
# is a -dev package and its libraries (scripts/device_groups.txt).
#
# --target FILE: what the destination already has, as scripts/gpu_check.sh writes it
# ($OUT/target_inventory.txt: `soname NAME` and `header PATH` lines). Groups whose key header
# and library it has, and runtime libraries whose soname it has, are left out, which keeps
# the archive small enough to travel with a device call. Without it the archive is complete
# for a machine with none of these packages.
set -euo pipefail

target=""
out=".device-bundle"
while (($#)); do
  case "$1" in
    --target) target="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "device_bundle: unknown argument '$1' (see the comment at the top)" >&2; exit 1 ;;
  esac
done
if [ -n "$target" ]; then
  [ -r "$target" ] || { echo "device_bundle: cannot read --target $target" >&2; exit 1; }
  target="$(realpath "$target")"
fi
out="$(realpath -m "$out")"
cd "$(dirname "$0")/.."

arch=x86_64-linux-gnu
# group|packages|key header|key soname lines, shared with scripts/gpu_check.sh.
mapfile -t groups_table < <(grep -v '^#' scripts/device_groups.txt)

# The C and C++ runtimes every Linux machine with a compiler has.
base_libs='^(ld-linux-x86-64|libc|libm|libdl|librt|libpthread|libresolv|libutil|libstdc\+\+|libgcc_s)\.so'

target_has() {  # kind value
  [ -n "$target" ] && grep -qxF "$1 $2" "$target"
}

missing=()
for entry in "${groups_table[@]}"; do
  IFS='|' read -r _ packages _ _ <<<"$entry"
  for package in $packages; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$package")
  done
done
if ((${#missing[@]})); then
  echo "device_bundle: install these first (apt-get install ${missing[*]}), or run scripts/setup.sh" >&2
  exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
stage="$work/stage"
mkdir -p "$stage/deps/runtime/usr/lib/$arch" "$work/debs"

included=()
for entry in "${groups_table[@]}"; do
  IFS='|' read -r group packages header soname <<<"$entry"
  if target_has header "/usr/$header" && { [ -z "$soname" ] || target_has soname "$soname"; }; then
    echo "device_bundle: $group: the target has it"
    continue
  fi
  (cd "$work/debs" && apt-get download -q -o APT::Sandbox::User=root $packages >/dev/null)
  for package in $packages; do
    dpkg -x "$work/debs/${package}_"*.deb "$stage/deps/$group"
  done
  # Doppio links shared libraries. OpenCV's and OpenBLAS's static ones are large and no CMake
  # package names them (the gflags and glog packages name theirs, so those stay).
  case "$group" in
    opencv | openblas) find "$stage/deps/$group" -name '*.a' -delete ;;
  esac
  rm -rf "$stage/deps/$group/usr/share/doc" "$stage/deps/$group/usr/share/man" "$work/debs/"*
  included+=("$group")
  echo "device_bundle: $group: $packages"
done

# glog's CMake package names its find modules by absolute path; make it relative so that
# the package works wherever the prefix is unpacked.
modules="$stage/deps/glog/usr/lib/$arch/cmake/glog/glog-modules.cmake"
if [ -f "$modules" ]; then
  sed -i 's|"/usr/share/glog/cmake"|"${CMAKE_CURRENT_LIST_DIR}/../../../../share/glog/cmake"|' "$modules"
fi

# dpkg -x makes no alternatives: give Open MPI's commands the names Debian's links give them
# (FindMPI looks for mpicc, the tests' launcher is mpiexec).
if [ -d "$stage/deps/mpi/usr/bin" ]; then
  for command in mpicc mpicxx mpirun mpiexec; do
    ln -sf "$command.openmpi" "$stage/deps/mpi/usr/bin/$command"
  done
fi

# Run-time closure: what the groups' libraries and programs load, resolved on this machine.
mapfile -t lib_dirs < <(find "$stage/deps" -name '*.so*' -printf '%h\n' | sort -u)
search="$(IFS=:; echo "${lib_dirs[*]}")"
mapfile -t elves < <(find "$stage/deps" -type f \( -name '*.so*' -o -path '*/bin/*' \) \
  -exec sh -c 'head -c4 "$1" | grep -q ELF && echo "$1"' _ {} \;)
declare -A copied=()
for elf in "${elves[@]}"; do
  while read -r name path; do
    [[ "$name" =~ $base_libs ]] && continue
    [[ "$path" == "$stage"/* ]] && continue
    [ -n "${copied[$name]:-}" ] && continue
    copied[$name]=1
    target_has soname "$name" && continue
    cp -L "$path" "$stage/deps/runtime/usr/lib/$arch/$name"
  done < <(LD_LIBRARY_PATH="$search" ldd "$elf" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
done

{
  echo "made $(date -u +%F) on $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "target: ${target:-none (complete)}"
  echo "groups: ${included[*]:-none}"
  echo "runtime libraries: $(ls "$stage/deps/runtime/usr/lib/$arch" | wc -l)"
} >"$stage/deps/MANIFEST"

mkdir -p "$out"
rm -f "$out/bundle.tar.xz"
tar -C "$stage" -cf - deps | xz -T0 -6 >"$out/bundle.tar.xz"
size=$(stat -c %s "$out/bundle.tar.xz")
cat "$stage/deps/MANIFEST"
echo "device_bundle: wrote $out/bundle.tar.xz ($((size / 1048576)) MiB)"
if ((size > 40 * 1048576)); then
  echo "device_bundle: over 40 MiB: with the repository it may not fit a device call's 64 MiB;" \
    "pass --target with the device's inventory to leave out what it has" >&2
fi
