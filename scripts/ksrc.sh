#!/bin/bash
# Extract from Debian's linux-source-6.1 tarball the few files the build
# needs (checkpatch and its data, the kselftest harness) into build/ksrc.
# Nothing of the kernel tree is committed.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out=${KSRC_OUT:-$top/build/ksrc}
tarball=$(ls /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n 1)
[ -n "$tarball" ] || { echo "ksrc: no /usr/src/linux-source-*.tar.xz; run scripts/setup.sh" >&2; exit 1; }

stamp=$out/.stamp
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$tarball" ]; then
	exit 0
fi

files=(
	scripts/checkpatch.pl
	scripts/spelling.txt
	scripts/const_structs.checkpatch
	tools/testing/selftests/kselftest_harness.h
	tools/testing/selftests/kselftest.h
)
prefix=$(basename "$tarball" .tar.xz)
rm -rf "$out"
mkdir -p "$out"
tar -xJf "$tarball" -C "$out" --strip-components=1 "${files[@]/#/$prefix/}"
echo "$tarball" > "$stamp"
