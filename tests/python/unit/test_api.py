# SPDX-License-Identifier: BSD-2-Clause
"""The dsmem package on the host, without a master or a module: its
exceptions, its argument checks (made before the store is touched, so a
store that never opened shows them), its buffer rules and its batch
convention."""
import errno
import pickle

import numpy as np
import pytest

import dsmem


@pytest.fixture
def s():
    store = dsmem.Store._closed()
    yield store
    store.close()


def closed(call):
    with pytest.raises(ValueError, match="closed"):
        call()


# ---- the package and its exceptions ----

def test_package_exports():
    for name in dsmem.__all__:
        assert hasattr(dsmem, name), name
    assert dsmem.KEY_MAX == 1024
    assert dsmem.BATCH_MAX == 4096
    assert dsmem.TTL_MAX_MS == 10 * 366 * 24 * 3600 * 1000
    assert dsmem._dsmem.__file__.startswith(dsmem.__path__[0])


def test_store_error_is_an_oserror():
    e = dsmem.StoreError(errno.EPERM, "'k' belongs to alice, not bob", "k")
    assert isinstance(e, OSError)
    assert (e.errno, e.strerror, e.key) == (errno.EPERM, "'k' belongs to alice, not bob", "k")
    assert str(e) == "[Errno 1] 'k' belongs to alice, not bob"
    again = pickle.loads(pickle.dumps(e))
    assert (type(again), again.errno) == (dsmem.StoreError, errno.EPERM)


def test_not_found_is_a_key_error():
    e = dsmem._make_error(errno.ENOENT, "no such key", b"kv/1")
    assert type(e) is dsmem.NotFound
    assert isinstance(e, KeyError) and isinstance(e, dsmem.StoreError)
    assert e.errno == errno.ENOENT and e.key == "kv/1"
    with pytest.raises(KeyError):
        raise e


def test_enoent_without_a_key_is_no_key_error():
    # a failed open (no /dev/dsmem) is not a missing key
    e = dsmem._make_error(errno.ENOENT, "the dsmem module is not loaded")
    assert type(e) is dsmem.StoreError


def test_error_factory_details():
    e = dsmem._make_error(errno.ERANGE, "", b"k", -1, 7)
    assert e.largest_version == 7 and e.strerror == "Numerical result out of range"
    f = dsmem._make_error(errno.ENOSPC, "flush failed: disk full", b"\xff", 12)
    assert type(f) is dsmem.FlushError and f.version == 12 and f.key == b"\xff"


def test_open_failure_raises_store_error():
    # no module on the host (or no master on port 1): an errno and the
    # library's message, at once
    with pytest.raises(dsmem.StoreError) as ei:
        dsmem.Store("127.0.0.1:1", node_id=4000, timeout_ms=2000, insecure=True)
    assert ei.value.errno > 0 and ei.value.strerror
    assert not isinstance(ei.value, KeyError)


@pytest.mark.parametrize("args, kw, exc", [
    (("", 1), {}, ValueError),
    ((["127.0.0.1:7700"], 0), {}, ValueError),
    (("m:1", "1"), {}, TypeError),
    (("m:1", 1, -1), {}, ValueError),
    (("m:1", 1, "lots"), {}, ValueError),
    (("m:1", 1), {"threads": 2000}, ValueError),
    (("m:1", 1), {"tls_ca": 3}, TypeError),
])
def test_store_arguments(args, kw, exc):
    with pytest.raises(exc):
        dsmem.Store(*args, **kw)


def test_sizes():
    assert dsmem._size("s", "64M") == 64 << 20
    assert dsmem._size("s", "1GiB") == 1 << 30
    assert dsmem._size("s", "4096") == 4096
    assert dsmem._size("s", 0) == 0


# ---- keys and options ----

@pytest.mark.parametrize("key, exc", [
    ("", ValueError),
    (b"a\0b", ValueError),
    pytest.param("x" * 1025, ValueError, id="1025-bytes"),
    (7, TypeError),
    (None, TypeError),
])
def test_bad_keys(s, key, exc):
    with pytest.raises(exc):
        s.put(key, b"v")
    with pytest.raises(exc):
        s.get(key)
    with pytest.raises(exc):
        s.exists(key)


def test_good_keys_reach_the_store(s):
    for key in ("k", b"k", bytearray(b"k"), "é" * 512, "x" * 1024):
        closed(lambda: s.put(key, b"v"))


@pytest.mark.parametrize("opts, exc", [
    ({"flush": "sometimes"}, ValueError),
    ({"replicas": 0}, ValueError),
    ({"replicas": -1}, ValueError),
    ({"replicas": 65}, ValueError),
    ({"replicas": 1.0}, TypeError),
    ({"ttl_ms": -5}, ValueError),
    ({"ttl_ms": dsmem.TTL_MAX_MS + 1}, ValueError),
    ({"bogus": 1}, TypeError),
])
def test_bad_put_options(s, opts, exc):
    with pytest.raises(exc):
        s.put("k", b"v", **opts)


def test_good_put_options(s):
    for opts in ({"replicas": 0, "nvmeof_replicas": 1}, {"flush": "eager", "soft_pin": True},
                 {"ttl_ms": dsmem.TTL_MAX_MS, "prefer_local": True}, {"flush": "lazy"}):
        closed(lambda: s.put("k", b"v", **opts))


# ---- buffers ----

def test_get_into_refuses_read_only_buffers(s):
    for buf in (b"abcd", memoryview(b"abcd"), np.zeros(4, np.uint8)):
        if isinstance(buf, np.ndarray):
            buf.flags.writeable = False
        with pytest.raises(TypeError, match="writable"):
            s.get_into("k", buf)


def test_get_into_refuses_non_contiguous_and_empty_buffers(s):
    with pytest.raises(BufferError, match="contiguous"):
        s.get_into("k", np.zeros((4, 4), np.float16)[:, 1])
    with pytest.raises(ValueError, match="empty"):
        s.get_into("k", bytearray())
    with pytest.raises(TypeError):
        s.get_into("k", "text")


def test_get_into_takes_writable_buffers(s):
    for buf in (bytearray(8), memoryview(bytearray(8)), np.zeros(8, np.float16),
                np.zeros((4, 4), np.float32, order="F")):
        closed(lambda: s.get_into("k", buf))


def test_put_copies_non_contiguous_but_put_from_does_not(s):
    strided = np.arange(32, dtype=np.float16).reshape(4, 8)[:, ::2]
    closed(lambda: s.put("k", strided))
    with pytest.raises(BufferError):
        s.put_from("k", strided)
    closed(lambda: s.put_from("k", np.ascontiguousarray(strided)))
    with pytest.raises(TypeError):
        s.put("k", "a str is not bytes")
    with pytest.raises(ValueError, match="empty"):
        s.put("k", b"")


def test_register_buffer_checks(s):
    with pytest.raises(TypeError):
        s.register_buffer([1, 2, 3])
    closed(lambda: s.register_buffer(bytearray(4096)))
    with pytest.raises(ValueError, match="not registered"):
        s.unregister_buffer(bytearray(16))
    assert s._c.registered == 0


# ---- the other calls of a closed store ----

def test_closed_store_refuses_every_call(s):
    assert s.closed
    closed(lambda: s.get("k"))
    closed(lambda: s.get("k", None))
    closed(lambda: s.exists("k"))
    closed(lambda: s.stat("k"))
    closed(lambda: s.remove("k"))
    closed(lambda: s.remove_prefix("kv/"))
    closed(lambda: s.list("kv/"))
    closed(lambda: s.set_attr("k", soft_pin=True))
    closed(lambda: s.put_batch(["a", "b"], [b"1", b"2"]))
    closed(lambda: s.get_batch(["a"]))
    closed(lambda: s.exists_batch(["a"]))
    closed(lambda: s.remove_batch(["a"]))
    closed(lambda: s.put_async("k", b"v"))
    closed(lambda: "k" in s)
    assert repr(s) == "<dsmem.Store closed>"


def test_argument_errors_of_the_other_calls(s):
    with pytest.raises(ValueError, match="empty prefix"):
        s.remove_prefix("")
    with pytest.raises(ValueError, match="soft_pin, ttl_ms"):
        s.set_attr("k")
    with pytest.raises(ValueError):
        s.get_into("k", bytearray(4), offset=-1)
    with pytest.raises(ValueError):
        s.get("k", min_version=-2)
    with pytest.raises(ValueError):
        s.list(limit=0)


def test_batch_arguments(s):
    assert s.get_batch([]) == [] and s.put_batch([], []) == []
    with pytest.raises(TypeError, match="sequence of keys"):
        s.get_batch("abc")
    with pytest.raises(ValueError, match="2 keys and 1 values"):
        s.put_batch(["a", "b"], [b"1"])
    with pytest.raises(ValueError, match="1 keys and 2 buffers"):
        s.get_batch_into(["a"], [bytearray(1), bytearray(1)])
    with pytest.raises(TypeError, match="writable"):
        s.get_batch_into(["a"], [b"x"])
    with pytest.raises(ValueError):
        s.exists_batch(["ok", ""])


def test_context_manager_closes(s):
    with s as same:
        assert same is s
    assert s.closed
    s.close()   # twice is fine


# ---- the batch convention ----

def test_batch_answers_misses_and_raises_the_rest():
    keys = ["a", b"b", "c"]
    raw = ([(0, b"A", 5), (-errno.ENOENT, None, -1), (0, b"C", 6)], "")
    assert dsmem.Store._answer(keys, raw, lambda r: r[1], None) == [b"A", None, b"C"]

    raw = ([(0, b"A", 5), (-errno.EBADMSG, None, -1), (-errno.ENOENT, None, -1)],
           "'b': no copy matched")
    with pytest.raises(dsmem.BatchError) as ei:
        dsmem.Store._answer(keys, raw, lambda r: r[1], None)
    e = ei.value
    assert e.errno == errno.EBADMSG and e.strerror == "'b': no copy matched"
    assert e.results == [b"A", None, None]
    assert list(e.errors) == [b"b"] and e.errors[b"b"].errno == errno.EBADMSG
    assert e.errors[b"b"].key == b"b"


def test_batch_put_flush_failures_keep_their_versions():
    raw = ([(0, 10), (-errno.ENOSPC, 11), (-errno.EPERM, -1)], "")
    with pytest.raises(dsmem.BatchError) as ei:
        dsmem.Store._answer(["a", "b", "c"], raw, lambda r: r[1], what="put")
    e = ei.value
    assert e.results == [10, 11, None]
    assert isinstance(e.errors["b"], dsmem.FlushError) and e.errors["b"].version == 11
    assert type(e.errors["c"]) is dsmem.StoreError
    # and a miss is an error where the call has no answer for it
    with pytest.raises(dsmem.BatchError) as ei:
        dsmem.Store._answer(["a"], ([(-errno.ENOENT, -1)], ""), lambda r: r[1])
    assert isinstance(ei.value.errors["a"], dsmem.NotFound)
