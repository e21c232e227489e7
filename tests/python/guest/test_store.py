# SPDX-License-Identifier: BSD-2-Clause
"""The dsmem package against a real dsmaster and two clients lending
memory, in a test guest (conftest.py sets it up)."""
import asyncio
import errno
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import dsmem


def test_master_info(env):
    info = dsmem.master_info([env.masters])
    assert info["leader"] and info["members"] >= 2


def test_put_get_bytes(s, s2):
    v = s.put("py/bytes/a", b"hello from python")
    assert v > 0
    assert s.get("py/bytes/a") == b"hello from python"
    # the same key as bytes, read by the other client
    data, version = s2.get_with_version(b"py/bytes/a")
    assert (data, version) == (b"hello from python", v)
    s["py/bytes/b"] = bytearray(b"\x00\xff" * 1000)
    assert s2["py/bytes/b"] == b"\x00\xff" * 1000
    assert "py/bytes/b" in s2 and "py/bytes/none" not in s2


def test_large_object_across_clients(s, s2):
    data = os.urandom(3 << 20)          # three shards, checksummed per MiB
    s.put("py/large", data, replicas=2)
    assert s2.get("py/large") == data
    info = s2.stat("py/large")
    assert (info.size, info.replicas, info.config_replicas) == (len(data), 2, 2)


def test_versions_increase(s, s2):
    v1 = s.put("py/ver", b"one")
    v2 = s2.put("py/ver", b"two, longer")
    assert v2 > v1
    assert s.get_with_version("py/ver") == (b"two, longer", v2)
    assert s.stat("py/ver").version == v2
    assert s.get("py/ver", min_version=v2) == b"two, longer"
    with pytest.raises(dsmem.StoreError) as ei:
        s.get("py/ver", min_version=v2 + 1000)
    assert ei.value.errno == errno.ERANGE and ei.value.largest_version == v2


def test_numpy_round_trip(s, s2):
    a = np.random.default_rng(1).standard_normal((8, 512)).astype(np.float16)
    s.put("py/np/a", a)
    b = np.frombuffer(s2.get("py/np/a"), dtype=np.float16).reshape(a.shape)
    assert np.array_equal(a, b)
    # a strided view is copied contiguous on the way
    s.put("py/np/cols", a[:, ::4])
    c = np.frombuffer(s.get("py/np/cols"), dtype=np.float16).reshape(8, 128)
    assert np.array_equal(c, a[:, ::4])


def test_registered_buffers_zero_copy(s, s2):
    src = np.arange(1 << 18, dtype=np.float32)          # 1 MiB
    dst = np.zeros_like(src)
    s.register_buffer(src)
    s2.register_buffer(dst)
    try:
        where = dst.ctypes.data
        s.put_from("py/reg/a", src)
        n = s2.get_into("py/reg/a", dst)
        assert n == src.nbytes
        # filled where it lies: the very array, not a copy handed back
        assert dst.ctypes.data == where and np.array_equal(dst, src)
        # a part of a registered buffer
        part = dst[: 1 << 10]
        part[:] = 0
        assert s2.get_into("py/reg/a", part, offset=4096) == part.nbytes
        assert np.array_equal(part, src[1024:2048])
        with pytest.raises(dsmem.StoreError) as ei:
            s.register_buffer(src)
        assert ei.value.errno == errno.EEXIST
    finally:
        s.unregister_buffer(src)
        s2.unregister_buffer(dst)
    # unregistered memory works too
    ba = bytearray(src.nbytes)
    assert s.get_into("py/reg/a", ba) == src.nbytes and bytes(ba) == src.tobytes()
    # a smaller buffer: filled, the rest not read
    small = bytearray(100)
    assert s.get_into("py/reg/a", small) == 100 and bytes(small) == src.tobytes()[:100]


def test_get_into_read_only_buffer_is_refused(s):
    s.put("py/ro", b"abc")
    with pytest.raises(TypeError):
        s.get_into("py/ro", b"xyz")


def test_exists_and_remove(s, s2):
    s.put("py/rm/a", b"x")
    assert s.exists("py/rm/a") and s2.exists("py/rm/a")
    s2.remove("py/rm/a")
    assert not s.exists("py/rm/a")
    with pytest.raises(dsmem.NotFound) as ei:
        s.get("py/rm/a")
    assert isinstance(ei.value, KeyError)
    assert ei.value.errno == errno.ENOENT and ei.value.key == "py/rm/a" and ei.value.strerror
    assert s.get("py/rm/a", None) is None
    with pytest.raises(KeyError):
        s.remove("py/rm/a")
    s.remove("py/rm/a", missing_ok=True)
    with pytest.raises(dsmem.NotFound):
        s.stat("py/rm/a")


def test_remove_prefix_and_list(s):
    for i in range(10):
        s.put(f"py/rp/a/{i}", b"a" * (i + 1))
    for i in range(2):
        s.put(f"py/rp/b/{i}", b"b")
    listed = s.list("py/rp/a/")
    assert [o.key for o in listed] == [f"py/rp/a/{i}" for i in range(10)]
    assert [o.size for o in listed] == list(range(1, 11))
    assert len(s.list("py/rp/", limit=3)) == 3
    assert s.remove_prefix("py/rp/a/") == 10
    assert [o.key for o in s.list("py/rp/")] == ["py/rp/b/0", "py/rp/b/1"]
    assert s.remove_prefix("py/rp/a/") == 0


def test_batches_with_a_missing_key(s, s2):
    keys = [f"py/batch/{i}" for i in range(8)]
    values = [bytes([i]) * (1000 * (i + 1)) for i in range(8)]
    versions = s.put_batch(keys, values, replicas=2)
    assert len(versions) == 8 and all(v > 0 for v in versions)
    assert len(set(versions)) == 8
    asked = keys[:3] + ["py/batch/missing"] + keys[3:]
    got = s2.get_batch(asked)
    assert got[3] is None
    assert got[:3] + got[4:] == values
    assert s.exists_batch(["py/batch/0", "py/batch/missing", b"py/batch/7"]) == [True, False, True]
    bufs = [bytearray(len(v)) for v in values[:2]] + [bytearray(10)]
    assert s2.get_batch_into(keys[:2] + ["py/batch/missing"], bufs) == [1000, 2000, None]
    assert bufs[:2] == values[:2]
    assert s.remove_batch([keys[0], "py/batch/missing"]) == [True, False]
    assert s.exists_batch(keys[:2]) == [False, True]


def test_batch_refused_as_a_whole(s, env):
    # one value over the master's largest object: the batch is refused
    # before anything is sent (the client knows the limit)
    with pytest.raises(dsmem.StoreError) as ei:
        s.put_batch(["py/be/a", "py/be/b"], [b"a", bytes(env.max_object + 1)])
    assert ei.value.errno == errno.EINVAL


def test_batch_of_numpy_tensors(s, s2):
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal((2, 16, 64)).astype(np.float16) for _ in range(40)]
    keys = [f"py/tensors/{i:03d}" for i in range(40)]
    s.put_batch(keys, arrays)
    out = [np.empty_like(a) for a in arrays]
    assert s2.get_batch_into(keys, out) == [a.nbytes for a in arrays]
    assert all(np.array_equal(a, b) for a, b in zip(arrays, out))


def test_soft_pin(s):
    s.put("py/pin", b"keep me", soft_pin=True)
    assert s.stat("py/pin").soft_pin
    s.set_attr("py/pin", soft_pin=False)
    assert not s.stat("py/pin").soft_pin


def test_ttl_expires(s, s2):
    s.put("py/ttl/short", b"soon gone", ttl_ms=1500)
    s.put("py/ttl/later", b"stays")
    info = s.stat("py/ttl/short")
    assert info.expires_ns > time.time_ns()
    s.set_attr("py/ttl/later", ttl_ms=1500)
    assert s.stat("py/ttl/later").expires_ns > 0
    deadline = time.monotonic() + 15
    while s2.exists("py/ttl/short") or s2.exists("py/ttl/later"):
        assert time.monotonic() < deadline, "the TTLs did not expire"
        time.sleep(0.25)
    with pytest.raises(dsmem.NotFound):
        s2.get("py/ttl/short")


def test_eager_flush(s):
    s.put("py/flush", b"on disk before put returns", flush="eager")
    info = s.stat("py/flush")
    assert info.flushed and info.flushed_version == info.version
    assert info.config_flush == "eager"


def test_errors_carry_errno_and_message(s, env):
    with pytest.raises(dsmem.StoreError) as ei:
        s.put("py/err/big", bytes(env.max_object + 1))
    assert ei.value.errno == errno.EINVAL and ei.value.strerror
    assert ei.value.key == "py/err/big"
    with pytest.raises(dsmem.NotFound) as ei:
        s.remove("py/err/none")
    assert ei.value.errno == errno.ENOENT


def test_async_futures(s, s2):
    futs = [s.put_async(f"py/async/{i}", bytes([i]) * 4096) for i in range(16)]
    versions = [f.result(timeout=60) for f in futs]
    assert all(v > 0 for v in versions)
    gets = [s2.get_async(f"py/async/{i}") for i in range(16)]
    assert [g.result(timeout=60) for g in gets] == [bytes([i]) * 4096 for i in range(16)]
    missing = s.get_async("py/async/none")
    assert isinstance(missing.exception(timeout=60), dsmem.NotFound)
    assert s.exists_batch_async([f"py/async/{i}" for i in range(3)]).result(60) == [True] * 3

    async def in_asyncio():
        return await asyncio.wrap_future(s2.get_async("py/async/5"))
    assert asyncio.run(in_asyncio()) == bytes([5]) * 4096


def test_gil_released_during_io(s):
    data = os.urandom(6 << 20)
    s.put("py/gil", data)
    spins = 0
    fut = s.get_async("py/gil")
    while not fut.done():
        spins += 1
    assert fut.result() == data
    # with the GIL held through the get, this thread could not have run
    assert spins > 100


def test_threads_share_a_store(s):
    errors = []

    def worker(t):
        try:
            for i in range(5):
                k = f"py/threads/{t}/{i}"
                s.put(k, k.encode())
                assert s.get(k) == k.encode()
        except Exception as e:      # noqa: BLE001 (reported below)
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_context_manager_and_close(env, s):
    s.put("py/ctx", b"from the first client")
    with dsmem.Store(env.masters, env.spare_node, 0, threads=2) as c:
        assert c.get("py/ctx") == b"from the first client"
        fut = c.put_async("py/ctx2", b"x")
    assert fut.done() and fut.result() > 0     # close waited for it
    assert c.closed
    with pytest.raises(ValueError, match="closed"):
        c.get("py/ctx")


def test_kvcache_example(env):
    # examples/kvcache.py, as make demo runs it: blocks cached, found by
    # prefix hash, fetched into a registered numpy buffer and checked
    r = subprocess.run([sys.executable, os.path.join(env.top, "examples", "kvcache.py"),
                        "--masters", env.masters, "--node", str(env.example_node),
                        "--segment", "16M"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 0, r.stdout
    assert "request 2 (shares the system prompt): 69 tokens, 4 blocks: 3 cached" in r.stdout, r.stdout
