#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""A KV cache for LLM inference on the dsmem object store, in the manner
of vLLM's prefix caching and LMCache: the attention keys and values a
prefill computed are stored per block of tokens and per layer, under a
hash of the whole prefix up to that block, so that a later request
sharing the prefix fetches them instead of computing them again.

    key   kv/MODEL/<prefix hash of blocks 0..i>/L<layer>
    value K and V of the block at that layer: float16 [2, heads, block, head_dim]

The prefix hash chains the blocks (h_i = sha256(h_{i-1} || tokens of
block i)), so a block's key names everything before it too: two prompts
share a block's key only if they share the whole prefix.

Run against a store (a dsmem node of this host, a master; TLS files as
the C clients find them, e.g. DSMEM_STORE_TLS_DIR):

    PYTHONPATH=build/user/python examples/kvcache.py --masters 10.99.0.1:7700 --node 66

`make demo` runs it in its guest.
"""
import argparse
import hashlib
import sys
import time

import numpy as np

import dsmem


class KVCache:
    """Blocks of KV tensors in a dsmem.Store, keyed by prefix hash."""

    def __init__(self, store, model, layers, heads, head_dim, block):
        self.store = store
        self.model = model
        self.layers = layers
        self.block = block
        self.shape = (2, heads, block, head_dim)        # K and V
        self.nbytes = int(np.prod(self.shape)) * 2      # float16

    def block_hashes(self, tokens):
        """The prefix hash of every whole block of tokens."""
        h = hashlib.sha256(self.model.encode()).digest()
        out = []
        for i in range(len(tokens) // self.block):
            chunk = np.asarray(tokens[i * self.block:(i + 1) * self.block], dtype=np.int64)
            h = hashlib.sha256(h + chunk.tobytes()).digest()
            out.append(h.hex()[:40])
        return out

    def key(self, block_hash, layer):
        return f"kv/{self.model}/{block_hash}/L{layer}"

    def lookup(self, hashes):
        """How many leading blocks are cached (every layer of each)."""
        if not hashes:
            return 0
        keys = [self.key(h, layer) for h in hashes for layer in range(self.layers)]
        present = self.store.exists_batch(keys)
        for i in range(len(hashes)):
            if not all(present[i * self.layers:(i + 1) * self.layers]):
                return i
        return len(hashes)

    def store_blocks(self, hashes, kv, ttl_ms=0):
        """kv: float16 [blocks, layers, 2, heads, block, head_dim]; one
        batch for all of them (soft-pinned: evicted after other objects)."""
        keys, values = [], []
        for i, h in enumerate(hashes):
            for layer in range(self.layers):
                keys.append(self.key(h, layer))
                values.append(kv[i, layer])
        return self.store.put_batch(keys, values, soft_pin=True, ttl_ms=ttl_ms)

    def fetch_into(self, hashes, out):
        """Read blocks into out (float16 [blocks, layers, 2, heads, block,
        head_dim], registered with the store: the RDMA lands in it)."""
        keys = [self.key(h, layer) for h in hashes for layer in range(self.layers)]
        views = [out[i, layer] for i in range(len(hashes)) for layer in range(self.layers)]
        got = self.store.get_batch_into(keys, views)
        missing = [k for k, n in zip(keys, got) if n is None]
        if missing:
            raise KeyError(f"{len(missing)} blocks evicted meanwhile, first {missing[0]}")
        return sum(got)


def compute_kv(cache, hashes):
    """The "prefill": stands in for the model, deterministic per block."""
    kv = np.empty((len(hashes), cache.layers, *cache.shape), dtype=np.float16)
    for i, h in enumerate(hashes):
        rng = np.random.default_rng(int(h[:16], 16))
        kv[i] = rng.standard_normal((cache.layers, *cache.shape), dtype=np.float32)
    return kv


def serve(cache, name, tokens, buf):
    """One request: fetch the cached prefix, compute and store the rest."""
    hashes = cache.block_hashes(tokens)
    t0 = time.perf_counter()
    hit = cache.lookup(hashes)
    fetched = cache.fetch_into(hashes[:hit], buf) if hit else 0
    t1 = time.perf_counter()
    new = compute_kv(cache, hashes[hit:])
    if hit:
        # what was fetched is what the prefill would have computed
        assert np.array_equal(buf[:hit], compute_kv(cache, hashes[:hit])), "cached KV differs"
    if len(new):
        cache.store_blocks(hashes[hit:], new)
    t2 = time.perf_counter()
    print(f"{name}: {len(tokens)} tokens, {len(hashes)} blocks: {hit} cached "
          f"({fetched / 1024:.0f} KiB fetched in {(t1 - t0) * 1e3:.1f} ms), "
          f"{len(hashes) - hit} computed and stored ({(t2 - t1) * 1e3:.1f} ms)")
    return hit


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--masters", required=True, help="host:port[,host:port...]")
    ap.add_argument("--node", type=int, required=True, help="a dsmem node of this host")
    ap.add_argument("--segment", default="32M", help="memory this client lends the pool")
    ap.add_argument("--model", default="demo-7b")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--block", type=int, default=16, help="tokens per block")
    ap.add_argument("--keep", action="store_true", help="leave the blocks in the store")
    a = ap.parse_args()

    with dsmem.Store(a.masters, a.node, a.segment) as store:
        cache = KVCache(store, a.model, a.layers, a.heads, a.head_dim, a.block)
        print(f"KV blocks of {a.block} tokens x {a.layers} layers, "
              f"{cache.nbytes // 1024} KiB per block and layer (float16 {cache.shape})")
        store.remove_prefix(f"kv/{a.model}/")       # a clean start
        rng = np.random.default_rng(7)
        system = rng.integers(0, 32000, 3 * a.block).tolist()  # a shared system prompt
        req1 = system + rng.integers(0, 32000, 2 * a.block).tolist()
        req2 = system + rng.integers(0, 32000, a.block + 5).tolist()

        # one buffer for fetched blocks, registered once: zero copy
        buf = np.empty((8, a.layers, *cache.shape), dtype=np.float16)
        store.register_buffer(buf)
        assert serve(cache, "request 1 (cold)", req1, buf) == 0
        assert serve(cache, "request 2 (shares the system prompt)", req2, buf) == 3
        assert serve(cache, "request 1 again", req1, buf) == 5
        n = len(store.list(f"kv/{a.model}/"))
        print(f"the store holds {n} KV objects under kv/{a.model}/")
        store.unregister_buffer(buf)
        if not a.keep:
            print(f"removed {store.remove_prefix(f'kv/{a.model}/')} objects")
    return 0


if __name__ == "__main__":
    sys.exit(main())
