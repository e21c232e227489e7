#!/bin/bash
# libdsuser as a consumer sees it: installed into a staging root, found by
# pkg-config, linked shared and static from C and C++, exporting exactly
# the symbols of its version script with the right SONAME, and without
# gRPC; libdsstore (the object store's client) beside it.  TAP output.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build/user
stage=$top/build/stage
cons=$top/tests/consumer
out=$top/build/consumer
n=0 failed=0

check() {	# check "description" command...
	n=$((n + 1))
	local desc=$1; shift
	local log
	if log=$("$@" 2>&1); then
		echo "ok $n - $desc"
	else
		echo "not ok $n - $desc"
		printf '%s\n' "$log" | sed 's/^/# /'
		failed=$((failed + 1))
	fi
}

echo "1..14"
rm -rf "$stage" "$out"
mkdir -p "$out"
check "cmake --install into a staging root" \
	env DESTDIR="$stage" cmake --install "$build" --prefix /usr/local

pcdir=$(dirname "$(find "$stage" -name libdsuser.pc | head -n 1)")
export PKG_CONFIG_PATH=$pcdir PKG_CONFIG_SYSROOT_DIR=$stage
check "pkg-config knows libdsuser 0.1.0" \
	sh -c '[ "$(pkg-config --modversion libdsuser)" = 0.1.0 ]'

cflags=$(pkg-config --cflags libdsuser)
libs=$(pkg-config --libs libdsuser)
# with PKG_CONFIG_SYSROOT_DIR, this already points into the staging root
libdir=$(pkg-config --variable=libdir libdsuser)
check "C consumer, shared library" sh -c "
	gcc -std=c11 -Wall -Wextra -Werror $cflags '$cons/consumer.c' -o '$out/c_shared' $libs &&
	LD_LIBRARY_PATH='$libdir' '$out/c_shared'"
check "C++20 consumer of ds.hpp, shared library" sh -c "
	g++ -std=c++20 -Wall -Wextra -Werror $cflags '$cons/consumer.cpp' -o '$out/cxx_shared' $libs &&
	LD_LIBRARY_PATH='$libdir' '$out/cxx_shared'"
check "C consumer, static library (pkg-config --static)" sh -c "
	gcc -std=c11 -Wall -Werror $cflags '$cons/consumer.c' -o '$out/c_static' \
		-Wl,-Bstatic $(pkg-config --libs-only-l libdsuser) -Wl,-Bdynamic \
		$(pkg-config --static --libs-only-L --libs-only-other libdsuser) \
		$(pkg-config --static --libs libdsuser | sed 's/-ldsuser//') &&
	! ldd '$out/c_static' | grep -q libdsuser && '$out/c_static'"

so=$(ls "$libdir"/libdsuser.so.*.*.* | head -n 1)
check "SONAME is libdsuser.so.1" \
	sh -c "objdump -p '$so' | grep -q 'SONAME *libdsuser.so.1\$'"
check "exports are exactly the version script's" bash -c "
	diff <(nm -D --defined-only '$so' | awk '\$2 == \"T\" { sub(/@.*/, \"\", \$3); print \$3 }' | sort) \
	     <(sed -n 's/^[[:space:]]*\(ds_[a-z_]*\);/\1/p' '$top/user/lib/libdsuser.map' | sort)"
check "every function of ds.h is exported" bash -c "
	diff <(grep -o '\bds_[a-z_]*(' '$top/user/lib/include/dsmem/ds.h' | tr -d '(' | sort -u) \
	     <(sed -n 's/^[[:space:]]*\(ds_[a-z_]*\);/\1/p' '$top/user/lib/libdsuser.map' | sort -u)"
# programs that never use the object store do not load gRPC
check "libdsuser needs no gRPC or protobuf" sh -c "
	readelf -d '$so' | grep -q NEEDED && ! readelf -d '$so' | grep NEEDED | grep -Ei 'grpc|gpr|protobuf|absl'"

check "pkg-config knows libdsstore 0.1.0, requiring libdsuser" \
	sh -c '[ "$(pkg-config --modversion libdsstore)" = 0.1.0 ] &&
	       pkg-config --print-requires libdsstore | grep -qx libdsuser'
store_so=$(ls "$libdir"/libdsstore.so.*.*.* | head -n 1)
check "SONAME is libdsstore.so.1" \
	sh -c "objdump -p '$store_so' | grep -q 'SONAME *libdsstore.so.1\$'"
# the C consumer again, calling libdsstore's newest functions (DSSTORE_1.1 to 1.3)
check "C consumer of store.h, shared libdsstore" sh -c "
	gcc -std=c11 -Wall -Wextra -Werror -DDS_CONSUMER_STORE $(pkg-config --cflags libdsstore) \
		'$cons/consumer.c' -o '$out/c_store' $(pkg-config --libs libdsstore) &&
	objdump -T '$out/c_store' | grep -q '(DSSTORE_1.1) *ds_store_put_ex\$' &&
	objdump -T '$out/c_store' | grep -q '(DSSTORE_1.2) *ds_store_segment_drain\$' &&
	objdump -T '$out/c_store' | grep -q '(DSSTORE_1.3) *ds_store_health_get\$' &&
	LD_LIBRARY_PATH='$libdir' '$out/c_store'"
check "libdsstore exports are exactly its version script's, and every function of store.h" bash -c "
	map=\$(sed -n 's/^[[:space:]]*\(ds_[a-z_]*\);/\1/p' '$top/user/lib/store/libdsstore.map' | sort -u)
	diff <(nm -D --defined-only '$store_so' | awk '\$2 == \"T\" { sub(/@.*/, \"\", \$3); print \$3 }' | sort) - <<< \"\$map\" &&
	diff <(grep -o '\bds_[a-z_]*(' '$top/user/lib/include/dsmem/store.h' | tr -d '(' | sort -u) - <<< \"\$map\""
# the Python package: where Debian's python3 looks (under the prefix),
# importable there with the installed libdsstore
pydir=$(find "$stage" -type d -path '*/dist-packages/dsmem' | head -n 1)
pysys=${pydir#"$stage"}
pysys=${pysys%/dsmem}
if [ ! -d "$top/build/user/python/dsmem" ]; then
	n=$((n + 1))
	echo "ok $n - the Python package dsmem installed on Debian's sys.path # SKIP not built (python3-dev, pybind11-dev)"
else
	check "the Python package dsmem installed on Debian's sys.path ($pysys), importable" sh -c "
		[ -n '$pydir' ] &&
		/usr/bin/python3 -c 'import sys; sys.exit(\"$pysys\" not in sys.path)' &&
		cd / && LD_LIBRARY_PATH='$libdir' PYTHONPATH='${pydir%/dsmem}' /usr/bin/python3 -c '
import dsmem
assert dsmem._dsmem.__file__.startswith(\"$pydir/\")
assert dsmem.KEY_MAX == 1024'"
fi
exit $((failed > 0))
