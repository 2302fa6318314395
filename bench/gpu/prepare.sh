#!/usr/bin/env bash
# prepare.sh - run HERE (the build machine, no GPU), after `make`, before the
# device call that runs bench/gpu/run-all.sh.
#
# The GPU machine gets this tree's build/ (carried: it is git-ignored) but
# not this machine's libraries.  The kmux CLI links libraries that machine
# may lack (libcjson.so.1 today), so copy every non-system shared library
# that build/kmux needs into build/devlibs/; run-all.sh puts build/devlibs on
# LD_LIBRARY_PATH when it invokes kmux, and only then.  libkmux.so must need
# nothing beyond libc/libdl/libpthread (DESIGN.md): that is checked here too.
#
# Usage: bash bench/gpu/prepare.sh [BUILD_DIR=build]
set -eu
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${1:-$ROOT/build}
DEV=$BUILD/devlibs

for f in "$BUILD/kmux" "$BUILD/libkmux.so"; do
	[ -e "$f" ] || { echo "prepare: $f missing: run make first" >&2; exit 1; }
done

# Libraries every glibc Linux has (the GPU machine is a newer glibc distro):
# never copied, since mixing glibc pieces breaks the loader.
is_system() {
	case $1 in
	linux-vdso.so* | linux-gate.so* | ld-linux*.so* | libc.so* | libm.so* | \
		libdl.so* | libpthread.so* | librt.so* | libresolv.so* | \
		libutil.so* | libgcc_s.so* | libstdc++.so* | libanl.so*) return 0 ;;
	esac
	return 1
}

# needed FILE: "name path" for each library the loader resolves for FILE
needed() {
	ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }
		$2 == "=>" && $3 == "not" { print $1, "NOTFOUND" }'
}

rm -rf "$DEV"
mkdir -p "$DEV"
status=0
while read -r name path; do
	is_system "$name" && continue
	if [ "$path" = NOTFOUND ]; then
		echo "prepare: $BUILD/kmux needs $name, which is not found here" >&2
		status=1
		continue
	fi
	cp -L "$path" "$DEV/$name"
	echo "prepare: copied $path -> ${DEV#"$ROOT"/}/$name ($(stat -c %s "$DEV/$name") bytes)"
done < <(needed "$BUILD/kmux")

while read -r name path; do
	is_system "$name" && continue
	echo "prepare: WARNING: libkmux.so needs $name ($path): the preload must need only libc/libdl/libpthread" >&2
	status=1
done < <(needed "$BUILD/libkmux.so")

# The CLI must now start with devlibs alone (the system's copies hidden is
# not possible here; at least check it starts).
if ! LD_LIBRARY_PATH="$DEV" "$BUILD/kmux" --help >/dev/null 2>&1; then
	echo "prepare: note: '$BUILD/kmux --help' exited nonzero (fine if --help is not implemented yet)"
fi

size=$(du -sm "$BUILD" | cut -f1)
echo "prepare: ${BUILD#"$ROOT"/} is ${size} MiB (the tree carried to the GPU machine must stay under 64 MiB)"
if [ "$size" -gt 48 ]; then
	echo "prepare: WARNING: build/ is large; carry only what is needed, e.g. build/kmux, build/libkmux.so, build/devlibs" >&2
fi
echo "prepare: now call the device with carry [\"build\"] and command: bash bench/gpu/run-all.sh"
exit $status
