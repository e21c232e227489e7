#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""The seed policies against the state of the art, on the same traces at
the same capacities (make bench B=sim; scripts/bench.sh runs it with the
package in the build tree on PYTHONPATH):

  sim_compare.py ZIPF_TRACE TRACE_DIR

- L1 hit ratio at one L1 capacity: seed-adaptive (and seed) against the
  best single-tier policy of S3-FIFO, SIEVE, W-TinyLFU, ARC and LIRS, on
  the bench's Zipf trace (16384 entries), a Zipf+loop+scan mix and each
  sample trace of TRACE_DIR (a tenth of its objects);
- modelled ns per request against the best two-tier composition P/lru at
  the same L1 and L2 (dsctl-sim(8)), L2 eight times L1 (131072 on Zipf);
- the gap to Belady's L1 hit ratio;
- the connection sweep's knee (QPs) at 620 and 4096 entries, against
  LRU's.

One line per figure: "bench: NAME VALUE UNIT".
"""
import os
import re
import sys

from dsmem import sim

SOTA = ["s3fifo", "sieve", "wtinylfu", "arc", "lirs"]
SEEDS = ["seed", "seed-adaptive"]
MIX = "zipf:alpha=0.9,objects=100k,weight=3+loop:objects=20000,weight=1+scan:weight=1,requests=4m,seed=7"


def say(name, value, unit):
    print(f"bench: {name} {value} {unit}", flush=True)


def fmt(x):
    return f"{x:.4f}"


def label(name):
    """A trace's name as a figure's part: lirs-2_pools.trace.gz -> lirs_2_pools"""
    base = os.path.basename(name).split(".")[0]
    return re.sub(r"[^A-Za-z0-9]+", "_", base).strip("_")


def by_policy(record):
    return {r["policy"]: r for r in record["runs"]}


def compare(name, l1, source, zipf=False):
    """Every figure of one trace (source: dict of sim.run's trace/gen)."""
    l2 = 131072 if zipf else 8 * l1
    policies = SOTA + SEEDS + ["belady"] + [p + "/lru" for p in SOTA]
    runs = by_policy(sim.run(**source, policy=policies, size=l1,
                             tiers=f"L1:{l1},L2:{l2}", window=10**9))
    hit = {p: 1 - r["miss_ratio"] for p, r in runs.items()}
    best = max(SOTA, key=lambda p: hit[p])
    best2 = min(SOTA, key=lambda p: runs[p + "/lru"]["mean_ns"])
    sfx = "" if zipf else "." + name
    for s in SEEDS:
        key = s.replace("-", "_")
        say(f"sim.{key}.l1_hit.{name}", fmt(hit[s]), "ratio")
        say(f"sim.{key}.l1_hit.ratio_vs_best_sota.{name}",
            fmt(hit[s] / hit[best]) if hit[best] else "nan", "x")
    for p in SOTA:
        say(f"sim.{p}.l1_hit.{name}", fmt(hit[p]), "ratio")
    say(f"sim.best_sota.l1_hit.{name}", fmt(hit[best]), "ratio")
    say(f"sim.belady.l1_hit.{name}", fmt(hit["belady"]), "ratio")
    say(f"sim.seed_adaptive.l1_hit.gap_to_belady{sfx}",
        fmt(hit["belady"] - hit["seed-adaptive"]), "ratio")
    ns = runs["seed-adaptive"]["mean_ns"]
    ns2 = runs[best2 + "/lru"]["mean_ns"]
    say(f"sim.seed_adaptive.modeled_ns{sfx}", ns, "ns")
    say(f"sim.best_sota_2tier.modeled_ns{sfx}", ns2, "ns")
    say(f"sim.seed_adaptive.modeled_ns.ratio_vs_best_sota_2tier{sfx}", fmt(ns / ns2), "x")


def knees():
    rec = sim.run(gen="sweep:qps=64..16384/4,ops=200k,seed=2",
                  policy=["lru", "seed", "seed-adaptive"], size=[620, 4096])
    knee = {(k["policy"], k["size"]): k["knee_qps"] for k in rec["sweep_knees"]}
    for size in (620, 4096):
        for p in ("lru", "seed", "seed-adaptive"):
            v = knee.get((p, size))
            say(f"sim.knee_qps.{p.replace('-', '_')}_{size}", v if v else "none", "QPs")
        for p in ("seed", "seed-adaptive"):
            v, ref = knee.get((p, size)), knee.get(("lru", size))
            if v and ref:
                say(f"sim.knee_qps.{p.replace('-', '_')}_{size}.ratio_vs_lru",
                    fmt(v / ref), "x")


def main():
    zipf, tdir = sys.argv[1], sys.argv[2]
    compare("zipf", 16384, {"trace": zipf}, zipf=True)
    compare("mix", 10000, {"gen": MIX})
    if not os.path.isdir(tdir):
        print(f"# no sample traces: {tdir} is not there", file=sys.stderr)
    for t in sim.trace_files(tdir) if os.path.isdir(tdir) else []:
        objects = sim.run(trace=t, policy="lru", size=1, window=10**9)["trace"]["objects"]
        compare(label(t), max(1, objects // 10), {"trace": t})
    knees()


if __name__ == "__main__":
    main()
