#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Write tests/vectors/tc_policy.dsmtrace, the token cache's shared test
vector: a designed access pattern that the policy core's unit test, the
module (CACHE_REPLAY) and the simulator replay through dstc_replay_step()
and must answer with the moves and counters of tc_policy.expect.

    tests/vectors/make_tc_vector.py [OUT]

The trace is the module's own binary format (include/uapi/linux/
dsmem_token.h): a struct dsmem_trace_hdr, then struct dsmem_trace_rec
records, little-endian; only READ and MODIFY accesses, handles of
generation 1.  The output is a pure function of this script: no clock, no
randomness.  The parameters it is designed for are the "param" lines of
tc_policy.expect; after changing either, regenerate the expected moves
with the unit test (DSMEM_REGEN_VECTOR=1 build/user/tests/test_tc_core)
and check them by hand again.

Times are in microseconds from T0 (1 s), as the phases below name them;
maintenance runs every 10 us of trace time (maint_ns).
"""

import os
import struct
import sys

PD, MR, CQ, QP = range(4)
READ, MODIFY = 0, 1
T0_NS = 1000000000
NAMES = {"pd": PD, "mr": MR, "cq": CQ, "qp": QP}


def handle(type_, index, gen=1):
    """DSMEM_HANDLE(type, gen, index)"""
    return type_ << 30 | (gen & 0x3fff) << 16 | (index & 0xffff)


class Trace:
    def __init__(self):
        self.recs = []
        self.last_ns = 0

    def acc(self, us, token, n=1, step=0.5, op=None):
        """n accesses of token ("qp3") from us on, step us apart; QPs are
        modified (their relaxed fields updated inline), the rest read."""
        type_ = NAMES[token.rstrip("0123456789")]
        index = int(token[len(token.rstrip("0123456789")):])
        if op is None:
            op = MODIFY if type_ == QP else READ
        for k in range(n):
            ns = T0_NS + round((us + k * step) * 1000)
            assert ns >= self.last_ns, "time goes back at %s" % token
            self.last_ns = ns
            self.recs.append((ns, handle(type_, index), type_, op))
        return us + n * step

    def write(self, path):
        with open(path, "wb") as f:
            # struct dsmem_trace_hdr
            f.write(struct.pack("<8sII", b"DSMTRACE", 1, 24))
            for ns, h, type_, op in self.recs:
                # struct dsmem_trace_rec: time_ns, handle, node, type, op,
                # tier (0: not recorded), pad, reserved
                f.write(struct.pack("<QIIBBBBI", ns, h, 0, type_, op, 0, 0, 0))


def phase1(t):
    """The fixed-threshold behaviour (promote_l2 2, promote_l1 4)."""
    # one access, then silence: the first maintenance (at 10 us) ages an
    # empty L1 and takes the adaptive mode's baseline
    t.acc(0, "mr3")

    # (a) L3 -> L2 on the 2nd hit in the window, with prefetch: qp1..qp3
    # were touched once, the first two follow qp0 to L2 (prefetch 2)
    t.acc(10.0, "qp1")
    t.acc(10.5, "qp2")
    t.acc(11.0, "qp3")
    t.acc(11.5, "qp0", 2)
    # (b) L2 -> L1 on the 4th hit
    t.acc(12.5, "qp0", 2)
    # (c) three more into L1 the same way; qp4 takes qp3 along to L2
    t.acc(14.0, "qp4", 4)
    t.acc(16.0, "qp5", 4)
    t.acc(18.0, "qp6", 4)
    # L1 is full: qp0, qp4, qp5, qp6, each with frequency 4

    # (d) L1 eviction, LFU: qp0 7, qp5 5, qp6 6, qp4 4 -> qp7's arrival
    # evicts qp4 (the least frequent) to L2
    t.acc(20.0, "qp0", 3)
    t.acc(21.5, "qp5")
    t.acc(22.0, "qp6", 2)
    t.acc(23.0, "qp7", 4)
    # ... LRU among equals: qp5 and qp7 both 5, qp5 used longer ago ->
    # qp8's arrival evicts qp5
    t.acc(25.0, "qp7")
    t.acc(25.5, "qp8", 4)

    # (e) L2 eviction, LRU: a hit in L2 refreshes qp1, the oldest there;
    # cq0..cq2 fill L2 to 8 and cq3's arrival evicts the least recently
    # used, qp2
    t.acc(27.5, "qp1")
    t.acc(28.0, "cq0", 2)
    t.acc(29.0, "cq1", 2)
    t.acc(30.0, "cq2", 2)
    t.acc(31.0, "cq3", 2)

    # (f) L3 -> L1 at once: mr0 reaches L2 on its 2nd hit and is hit there
    # once more; eight newcomers then push it out of L2 (LRU), and its 4th
    # hit, still in the window, finds it in L3 with enough for L1
    t.acc(32.0, "mr0", 3)
    for k, tok in enumerate(("qp9", "qp10", "qp11", "qp12", "qp13", "qp14",
                             "cq200", "cq201")):
        t.acc(33.5 + k, tok, 2)
    t.acc(41.5, "mr0")

    # (g) idle demotion: qp6 and qp7, left alone, leave L1 at the first
    # maintenance more than 40 us after their last hit (65 and 75 us),
    # each evicting L2's least recently used; qp0 and mr0 stay busy and
    # gather frequency for (h).  L2 entries idle for more than 80 us go
    # to L3 from the LRU end (120 and 130 us)
    for k in range(6):
        t.acc(45.0 + 10 * k, "qp0", 3)
        t.acc(47.0 + 10 * k, "mr0", 1)

    # (h) aging: the maintenance at 110 us halves every L1 frequency; the
    # newcomers qp15 and cq3 then outscore qp0, whose hits are old, and
    # cq1's arrival evicts qp0 (without aging it would evict qp15)
    t.acc(110.0, "mr0", 10, step=0.25)
    t.acc(113.0, "qp0")
    t.acc(114.0, "qp15", 14, step=0.25)
    t.acc(118.0, "cq3", 15, step=0.25)
    t.acc(122.0, "cq1", 4)

    # (i) the hot four of L1, until L1 has served over half of the
    # accesses since the adaptive mode's baseline: the adaptation at the
    # start of phase 2 finds nothing to change
    for k in range(6):
        for j, tok in enumerate(("cq1", "qp15", "mr0", "cq3")):
            t.acc(130.0 + 2 * k + 0.5 * j, tok)


# every token of the trace, in the order phase 2 sweeps them
SWEEP = (["qp%d" % i for i in range(16)] + ["cq0", "cq1", "cq2", "cq3",
         "cq200", "cq201"] + ["mr%d" % i for i in range(4)])


def phase2(t):
    """The adaptive mode: adaptations every 1 ms, at the first maintenance
    of each; each judges the accesses since the one before."""
    # (j) 1.5 ms: the first maintenance after the quiet demotes every idle
    # entry (L1 -> L2, and on down to L3), then judges phase 1: no change.
    # A sweep of every token, each hit once per 52 us (windows are 20 us):
    # all L3 hits and no migration, so at 2.5 ms the thresholds halve
    # (promote_l1 4 -> 2; promote_l2 stays 2)
    for k in range(104):
        t.acc(1500.0 + 2 * k, SWEEP[k % len(SWEEP)])
    # (k) the same again: at 3.5 ms promote_l1 2 -> 1, promote_l2 -> 1
    for k in range(104):
        t.acc(2500.0 + 2 * k, SWEEP[k % len(SWEEP)])
    # (l) with thresholds at 1 every L3 hit goes to L1 at once, evicting
    # through L2 to L3: the migration budget (100 per interval) runs out,
    # the queue (8) fills and refuses; L2 served less than L3, so at
    # 4.5 ms the thresholds double (2 and 2)
    for k in range(104):
        t.acc(3500.0 + 2 * k, SWEEP[k % len(SWEEP)])
    # (m) 4.5 ms: the doubling; the queue still holds what the spent
    # budget left, and the maintenance at 4.51 ms runs it.  Then a hot set
    # served by L1 (qp0 and mr0 go L3 -> L1 on their 2nd hit, promote_l1
    # being 2; qp1 is prefetched to L2 first): at 5.5 ms the adaptation
    # finds nothing to change, and the idle demotions empty L1 and L2
    t.acc(4500.0, "qp2")
    for k in range(25):
        for j, tok in enumerate(("qp0", "qp1", "cq0", "mr0")):
            t.acc(4510.0 + 2 * k + 0.5 * j, tok)
    t.acc(5500.0, "qp2")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "tc_policy.dsmtrace")
    t = Trace()
    phase1(t)
    phase2(t)
    t.write(out)


if __name__ == "__main__":
    main()
