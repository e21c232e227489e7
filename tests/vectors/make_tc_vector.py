#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Write the token cache's shared test vectors into tests/vectors (or
DIR): tc_policy.dsmtrace (fixed mode) and tc_adaptive.dsmtrace (adaptive
mode), designed access patterns that the policy core's unit test, the
module (CACHE_REPLAY) and the simulator replay through dstc_replay_step()
and must answer with the moves and counters of the .expect file of the
same name.

    tests/vectors/make_tc_vector.py [DIR]

The trace is the module's own binary format (include/uapi/linux/
dsmem_token.h): a struct dsmem_trace_hdr, then struct dsmem_trace_rec
records, little-endian; only READ and MODIFY accesses, handles of
generation 1.  The output is a pure function of this script: no clock, no
randomness.  The parameters it is designed for are the "param" lines of
.expect files; after changing either, regenerate the expected moves
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
    return (type_ & 3) << 30 | (type_ >> 2 & 1) << 29 | (gen & 0x1fff) << 16 | (index & 0xffff)


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
    """The fixed-threshold behaviour (tc_policy: promote_l2 2,
    promote_l1 4)."""
    # one access, then silence: the first maintenance (at 10 us) ages an
    # empty L1
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

    # (i) the hot four of L1
    for k in range(6):
        for j, tok in enumerate(("cq1", "qp15", "mr0", "cq3")):
            t.acc(130.0 + 2 * k + 0.5 * j, tok)


# every token the adaptive vector sweeps, in order
SWEEP = (["qp%d" % i for i in range(16)] + ["cq0", "cq1", "cq2", "cq3",
         "cq200", "cq201"] + ["mr%d" % i for i in range(4)])


def adaptive(t):
    """The adaptive mode (tc_adaptive): an admission window of one entry
    in front of L1's main part, duels by recent hits, thresholds that
    follow the migration budget.  The set window (1 ms) keeps hits exact
    until the first sample of 80 accesses sets it from the rate."""
    # (a) qp0..qp7, three hits each: each goes L3 -> L1 on its first (the
    # thresholds start at 1), through the window, whose previous entry
    # moves on to main while L1 has room.  L1 is then full: main qp0..qp6,
    # the window qp7
    for k in range(8):
        t.acc(10.0 + 1.5 * k, "qp%d" % k, 3)
    # (b) qp8's arrival: qp7 leaves the window and duels main's least
    # asked-for, qp0 (three hits, the least recent); a tie keeps main's,
    # so qp7 goes to L2
    t.acc(22.0, "qp8")
    # (c) qp9's: qp8, one hit, loses to qp0 and goes to L2
    t.acc(22.5, "qp9")
    # (d) qp9 hit four times more; qp10's arrival: qp9 (5) beats qp0 (3),
    # which goes to L2, and qp9 joins main
    t.acc(23.0, "qp9", 4)
    t.acc(25.0, "qp10")
    # (e) qp7, hit in L2 (its 4th), comes back to L1 at once: qp10 (1)
    # loses to qp1 (3) and goes to L2
    t.acc(25.5, "qp7")
    # (f) qp11, hit 20 times: its arrival lets qp7 (4) beat qp1 (3), which
    # goes to L2; (g) qp12's arrival: qp11 counts 15 (the duel's
    # ceiling), more than qp2 (3), which goes to L2
    t.acc(26.0, "qp11", 20)
    t.acc(36.0, "qp12")

    # (h) from 100 us, single hits of every token in turn, 104 of them, one
    # every 8 us: each L3 hit enters L1 and pushes a loser to L2 and L2's
    # least recent to L3, until the budget (100 a 1 ms interval) is spent;
    # then the queue (8) fills and refuses, and entries wait in L3 (L2
    # stays full, so prefetch, which never evicts, takes nobody).  At
    # 1.026 ms the adaptation finds the budget spent: the thresholds
    # double (promote_l1 2, promote_l2 1)
    for k in range(104):
        t.acc(100.0 + 8 * k, SWEEP[k % len(SWEEP)])
    # (i) the same from 1.01 ms: spent again, promote_l1 4 (the set one,
    # the ceiling) and promote_l2 2 at 2.026 ms; (j) and again: no change
    # at 3.03 ms, 4 being the ceiling
    for k in range(104):
        t.acc(1010.0 + 8 * k, SWEEP[k % len(SWEEP)])
    for k in range(104):
        t.acc(2010.0 + 8 * k, SWEEP[k % len(SWEEP)])
    # (k) from 3.01 ms a hot set of four, which soon is all in L1: the
    # interval to 4.03 ms still drains the queue and refuses (no change);
    # then nothing spends the budget, and the thresholds halve at 5.03 ms
    # and 6.03 ms (to 2 and 1, then 1 and 1)
    for k in range(156):
        for j, tok in enumerate(("qp0", "qp1", "cq0", "mr0")):
            t.acc(3010.0 + 20 * k + 0.5 * j, tok)
    # (l) 20 ms: a last access after a quiet longer than L1's idle time
    # in effect (8 windows of 0.8 ms, the window the hot set's rate set):
    # L1's idle entries go to L2; L2's (64 windows) stay
    t.acc(20000.0, "qp2")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.abspath(__file__))
    for name, script in (("tc_policy", phase1), ("tc_adaptive", adaptive)):
        t = Trace()
        script(t)
        t.write(os.path.join(out, name + ".dsmtrace"))


if __name__ == "__main__":
    main()
