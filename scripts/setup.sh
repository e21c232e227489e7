#!/bin/bash
# Install every Debian package dsmem needs to build, test and demo.
# Idempotent: asks apt only for what is missing, and does nothing (not even
# 'apt-get update') when everything is there.  Needs root (or sudo).
set -euo pipefail

packages=(
	# toolchain and userspace build (ccache: a clone's build reuses the
	# objects of an earlier one on the same machine)
	gcc g++ make cmake pkg-config ccache
	libnl-3-dev libnl-genl-3-dev libcmocka-dev nlohmann-json3-dev
	# the kernel the module is built for and booted in the test guests
	linux-image-amd64 linux-headers-amd64
	# checkpatch.pl and kselftest_harness.h come from here (scripts/ksrc.sh)
	linux-source-6.1 xz-utils
	# the debug kernel of the debug test tier (scripts/debug-kernel)
	bc bison flex libelf-dev patch
	sparse perl python3 python3-yaml
	# test guests
	qemu-system-x86 busybox-static kmod cpio iproute2 iputils-ping procps
	# RDMA userspace: rdma(8) for rxe, verbs, perftest for benchmarks
	rdma-core ibverbs-utils rdmacm-utils perftest libibverbs-dev librdmacm-dev
	# the rdm benchmark counts the system calls an operation costs
	strace
	# the cache simulator: compressed traces, plots, and the reference
	# cache library its benchmark is measured against
	zlib1g-dev libzstd-dev liblzma-dev gnuplot-nox python3-cachetools curl
	# the web console: HTTP(S), its database, password hashing, charts;
	# libcurl for its in-guest test; Chromium and Node.js for the
	# browser tests (playwright-core from npm, package-lock.json)
	libcpp-httplib-dev libsqlite3-dev libsodium-dev libjs-chart.js
	libcurl4-openssl-dev chromium nodejs
	# the B+tree's node checksum (XXH64: cheap where the CPU is emulated)
	libxxhash-dev
	# the object store: gRPC between clients and dsmaster, etcd for the
	# master's leader election and metadata, nvme-cli for the NVMe-oF tier
	libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
	etcd-server etcd-client nvme-cli
	# a client whose clock is off the master's, in the store's tests
	faketime
	# its TLS: client certificates checked against the store's CA, and
	# the throwaway CA of the tests and the demo (scripts/store-certs)
	libssl-dev openssl
	# its Python package (user/python, pybind11), its pytest tests and
	# the KV-cache example's tensors
	python3-dev pybind11-dev python3-numpy python3-pytest
	# the simulator's sweeps on a cluster (dsmem.sim; a local Dask
	# cluster in its tests)
	python3-dask python3-distributed
)

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done

sudo=
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then
	sudo=sudo
fi

# npm packages of the browser tests, as package-lock.json pins them
npm_deps() {
	local top
	top=$(cd "$(dirname "$0")/.." && pwd)
	if ! command -v npm >/dev/null; then
		# Debian's nodejs comes without it (NodeSource's has its own)
		echo "setup: installing npm"
		$sudo apt-get install -y -qq --no-install-recommends npm >/dev/null
	fi
	if [ ! -d "$top/node_modules/playwright-core" ]; then
		echo "setup: npm ci (playwright-core for the browser tests)"
		(cd "$top" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
	fi
}

if [ ${#missing[@]} -eq 0 ]; then
	echo "setup: all ${#packages[@]} packages present"
	npm_deps
	exit 0
fi

if [ "$(id -u)" -ne 0 ] && [ -z "$sudo" ]; then
	echo "setup: need root to install: ${missing[*]}" >&2
	exit 1
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
npm_deps
echo "setup: done"
