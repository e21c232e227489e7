#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""The reference `make bench B=sim` measures `dsctl sim` against: the first N
requests of an oracleGeneral trace replayed through cachetools.LRUCache
(Debian's python3-cachetools), counting misses.

    sim_ref.py TRACE N [CAPACITY]

A request is a lookup (which refreshes the entry's recency); a miss inserts
the object, evicting the least recently used one when the cache holds
CAPACITY (default 16384) entries.  Object sizes are ignored: the capacity is
in entries, as `dsctl sim run ... size 16384` counts it.  Only the replay loop
is timed, not reading the file.  Prints one JSON object:
{requests, misses, miss_ratio, seconds, mreqs_per_s}.
"""
import json
import struct
import sys
import time

import cachetools

# libCacheSim's oracleGeneral: little-endian u32 time, u64 id, u32 size,
# i64 next access
RECORD = struct.Struct("<IQIq")


def read_ids(path, limit):
    with open(path, "rb") as f:
        data = f.read(limit * RECORD.size)
    if len(data) % RECORD.size:
        sys.exit("Error: %s: truncated record at offset %d"
                 % (path, len(data) - len(data) % RECORD.size))
    return [rec[1] for rec in RECORD.iter_unpack(data)]


def replay(ids, capacity):
    cache = cachetools.LRUCache(maxsize=capacity)
    get = cache.get
    misses = 0
    t0 = time.perf_counter()
    for key in ids:
        if get(key) is None:  # get() refreshes a hit's recency
            misses += 1
            cache[key] = True
    return misses, time.perf_counter() - t0


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: sim_ref.py TRACE N [CAPACITY]")
    path, limit = sys.argv[1], int(sys.argv[2])
    capacity = int(sys.argv[3]) if len(sys.argv) == 4 else 16384
    ids = read_ids(path, limit)
    if not ids:
        sys.exit("Error: %s: no requests" % path)
    misses, seconds = replay(ids, capacity)
    print(json.dumps({
        "requests": len(ids),
        "misses": misses,
        "miss_ratio": round(misses / len(ids), 6),
        "seconds": round(seconds, 4),
        "mreqs_per_s": round(len(ids) / seconds / 1e6, 4),
    }))


if __name__ == "__main__":
    main()
