#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""The Python client's get bandwidth for 1 MiB objects, for make bench B=obj.

    py_bench.py MASTERS NODE COUNT

COUNT objects put, then read into registered numpy buffers (zero copy),
four in flight as obj_bench's --depth 4; the bench compares the figure
with the C client's obj.get_bw_1M from the same run.
"""
import sys
import time

import numpy as np

import dsmem

SIZE = 1 << 20
DEPTH = 4


def main():
    masters, node, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    keys = [f"py_bench/{i}" for i in range(count)]
    with dsmem.Store(masters, node) as s:
        src = np.random.default_rng(1).integers(0, 255, SIZE, dtype=np.uint8)
        bufs = [np.zeros(SIZE, dtype=np.uint8) for _ in range(DEPTH)]
        for b in bufs + [src]:
            s.register_buffer(b)
        s.put_batch(keys, [src] * count)
        inflight = []
        t0 = time.monotonic()
        for i, k in enumerate(keys):
            if len(inflight) == DEPTH:
                inflight.pop(0).result()
            inflight.append(s.get_into_async(k, bufs[i % DEPTH]))
        for f in inflight:
            if f.result() != SIZE:
                sys.exit("py_bench: a get read short")
        t = time.monotonic() - t0
        if not all(np.array_equal(b, src) for b in bufs):
            sys.exit("py_bench: a get read the wrong bytes")
        print(f"bench: obj.py_get_bw_1M {count * SIZE / 2**20 / t:.1f} MiB/s", flush=True)
        s.remove_batch(keys)


if __name__ == "__main__":
    main()
