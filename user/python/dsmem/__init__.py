# SPDX-License-Identifier: BSD-2-Clause
"""dsmem: the pooled object store of dsmem, for Python.

A thin layer over libdsstore (the C client, <dsmem/store.h>), through
its C++ layer, in the manner of Mooncake's MooncakeDistributedStore::

    import dsmem, numpy as np

    with dsmem.Store("10.99.0.1:7700", node_id=1, segment_size="256M") as s:
        v = s.put("weights/layer0", b"...", replicas=2, flush="lazy")
        data = s.get("weights/layer0")            # bytes
        a = np.empty(1024, np.float16)
        s.register_buffer(a)                      # RDMA-registered, pinned
        s.put_from("kv/block7", a)                # no copy
        n = s.get_into("kv/block7", a)            # no copy: bytes read

Every call that waits on the store releases the GIL.  Failures are
StoreError (an OSError: .errno, .strerror, .key); a missing key is
NotFound, also a KeyError.  docs/python.md has the whole API.
"""

import concurrent.futures
import dataclasses
import errno as _errno
import os
import threading

from . import _dsmem

__version__ = "0.1.0"

__all__ = [
    "Store", "ObjectInfo", "StoreError", "NotFound", "FlushError", "BatchError",
    "master_info", "KEY_MAX", "BATCH_MAX", "TTL_MAX_MS", "FLUSH_MODES",
]

KEY_MAX = _dsmem.KEY_MAX          # bytes in a key
BATCH_MAX = _dsmem.BATCH_MAX      # keys in one batch task (larger batches are split)
TTL_MAX_MS = _dsmem.TTL_MAX_MS    # the longest TTL the master takes
FLUSH_MODES = {"none": 0, "lazy": 1, "eager": 2}
_REPLICAS_MAX = 64


# ---- errors -----------------------------------------------------------------

class StoreError(OSError):
    """A failure of the store: errno (positive), strerror (the library's
    or the master's words), key (the key it is about, or None)."""

    def __init__(self, errno, strerror, key=None):
        super().__init__(errno, strerror)
        self.key = key


class NotFound(StoreError, KeyError):
    """ENOENT: no complete version of the key (also a KeyError)."""


class FlushError(StoreError):
    """An eager put that wrote its replicas but whose flush to the slow
    tier failed: the object is there (version), the master keeps trying."""

    def __init__(self, errno, strerror, key=None, version=-1):
        super().__init__(errno, strerror, key)
        self.version = version


class BatchError(StoreError):
    """Some keys of a batch failed (other than the misses the call
    answers itself).  results: the list the call would have returned,
    None where a key failed; errors: {key: StoreError} of those keys.
    errno is the first failure's."""

    def __init__(self, errno, strerror, results=None, errors=None):
        super().__init__(errno, strerror)
        self.results = results if results is not None else []
        self.errors = errors if errors is not None else {}


def _key_out(key):
    if isinstance(key, bytes):
        try:
            return key.decode()
        except UnicodeDecodeError:
            return key
    return key


def _make_error(errno, message, key=None, version=-1, largest_version=-1):
    key = _key_out(key)
    if not message:
        message = os.strerror(errno)
    if errno == _errno.ENOENT and key is not None:
        return NotFound(errno, message, key)
    if version is not None and version >= 0:
        return FlushError(errno, message, key, version)
    e = StoreError(errno, message, key)
    if errno == _errno.ERANGE and largest_version is not None:
        e.largest_version = largest_version  # the newest readable version (-1: none)
    return e


_dsmem._set_error_factory(_make_error)


# ---- arguments ----------------------------------------------------------------

def _key(key):
    """A key as the library takes it: bytes, 1 to KEY_MAX, no NUL."""
    if isinstance(key, str):
        k = key.encode()
    elif isinstance(key, (bytes, bytearray, memoryview)):
        k = bytes(key)
    else:
        raise TypeError(f"a key is str or bytes, not {type(key).__name__!r}")
    if not k:
        raise ValueError("an empty key")
    if len(k) > KEY_MAX:
        raise ValueError(f"a key of {len(k)} bytes; the limit is {KEY_MAX}")
    if b"\0" in k:
        raise ValueError("a key with a NUL byte")
    return k


def _keys(keys):
    """-> (the keys as given, as a list; the keys as bytes)"""
    if isinstance(keys, (str, bytes)):
        raise TypeError("a batch takes a sequence of keys, not one key")
    keys = list(keys)
    return keys, [_key(k) for k in keys]


def _count(name, v, lo, hi):
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{name} is an int, not {type(v).__name__!r}")
    if not lo <= v <= hi:
        raise ValueError(f"{name} {v} is out of range [{lo}, {hi}]")
    return v


def _size(name, v):
    """bytes: an int, or a string with K, M, G or T (binary units)."""
    if isinstance(v, str):
        units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
        s = v.strip().upper().removesuffix("B").removesuffix("I")
        u = s[-1:] if s[-1:] in units and s[-1:] else ""
        try:
            n = int(s[: len(s) - len(u)]) * units[u]
        except ValueError:
            raise ValueError(f"{name} {v!r} is not a size (like 268435456 or '256M')") from None
        v = n
    return _count(name, v, 0, (1 << 64) - 1)


def _put_opts(replicas=1, nvmeof_replicas=0, flush="none", prefer_local=False,
              soft_pin=False, ttl_ms=0):
    _count("replicas", replicas, 0, _REPLICAS_MAX)
    _count("nvmeof_replicas", nvmeof_replicas, 0, _REPLICAS_MAX)
    if replicas + nvmeof_replicas == 0:
        raise ValueError("no replicas at all: replicas or nvmeof_replicas must be 1 or more")
    if flush not in FLUSH_MODES:
        raise ValueError(f"flush is one of {', '.join(map(repr, FLUSH_MODES))}, not {flush!r}")
    _count("ttl_ms", ttl_ms, 0, TTL_MAX_MS)
    return _dsmem.PutOpts(replicas, nvmeof_replicas, FLUSH_MODES[flush], bool(prefer_local),
                          bool(soft_pin), ttl_ms)


_RAISE = object()


# ---- objects ------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ObjectInfo:
    """The newest complete version of a key, as stat() and list() see it.
    key is a str (bytes if it is not UTF-8); times are CLOCK_REALTIME
    nanoseconds, expires_ns 0 when it never expires."""
    key: object
    version: int
    size: int
    replicas: int             # complete DRAM copies
    nvmeof_replicas: int      # complete NVMe-oF copies
    flushed: bool             # in the slow tier
    flushed_version: int
    soft_pin: bool
    ctime_ns: int
    expires_ns: int
    atime_ns: int
    config_replicas: int      # what the put asked for
    config_nvmeof_replicas: int
    config_flush: str
    config_prefer_local: bool

    @classmethod
    def _of(cls, d):
        d = dict(d)
        d["key"] = _key_out(d["key"])
        names = {v: k for k, v in FLUSH_MODES.items()}
        d["config_flush"] = names.get(d["config_flush"], str(d["config_flush"]))
        return cls(**d)


def master_info(masters):
    """The leading master's figures (leader, standbys, term, objects,
    evictions...), as dsctl master show; TLS as Store's defaults."""
    if not isinstance(masters, str):
        masters = ",".join(masters)
    return _dsmem.master_info(masters)


class Store:
    """A client of the store: it joins the master's pool, lending
    segment_size bytes of its dsmem node's memory (0: none).

    masters: "host:port[,host:port...]" or a list of them; node_id: an
    existing local dsmem node (dsctl node add); addr: the node's RDMA IP
    (None: its device's); threads: the library's task workers, and the
    async calls' threads; timeout_ms: each operation's limit.  TLS files
    (PEM): None takes $DSMEM_STORE_CA/CERT/KEY, else DSMEM_STORE_TLS_DIR's
    (default /etc/dsmem/store) ca.crt, client.crt, client.key; insecure:
    plaintext to a loopback master (dsmaster --insecure).
    """

    def __init__(self, masters, node_id, segment_size=0, *, addr=None, threads=4,
                 timeout_ms=30000, tls_ca=None, tls_cert=None, tls_key=None, insecure=False):
        if not isinstance(masters, str):
            masters = ",".join(masters)
        if not masters:
            raise ValueError("no masters")
        _count("node_id", node_id, 1, (1 << 32) - 1)
        segment_size = _size("segment_size", segment_size)
        _count("threads", threads, 0, 1024)
        _count("timeout_ms", timeout_ms, 0, (1 << 32) - 1)
        for name, v in (("addr", addr), ("tls_ca", tls_ca), ("tls_cert", tls_cert),
                        ("tls_key", tls_key)):
            if v is not None and not isinstance(v, (str, os.PathLike)):
                raise TypeError(f"{name} is a str, not {type(v).__name__!r}")
        self._threads = threads or 4
        self._pool = None
        self._lock = threading.Lock()
        self._c = None
        self._c = _dsmem.Client(masters, node_id, segment_size,
                                None if addr is None else os.fspath(addr), threads, timeout_ms,
                                *(None if f is None else os.fspath(f)
                                  for f in (tls_ca, tls_cert, tls_key)),
                                bool(insecure))

    @classmethod
    def _closed(cls):
        """A store that never opened: its calls check their arguments, then
        say it is closed (tests without a master)."""
        s = cls.__new__(cls)
        s._threads = 1
        s._pool = None
        s._lock = threading.Lock()
        s._c = _dsmem.Client.closed_client()
        return s

    # -- life ----------------------------------------------------------------

    @property
    def closed(self):
        return self._c is None or self._c.closed

    def close(self, drain=False):
        """Leave the pool.  Async calls still running are waited for.
        drain: the master first moves this client's replicas to other
        segments; without it the segment stays served until the client's
        heartbeats are missed."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        if self._c is not None:
            self._c.close(bool(drain))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return f"<dsmem.Store {'closed' if self.closed else 'open'}>"

    # -- single keys ---------------------------------------------------------

    def put(self, key, value, *, replicas=1, nvmeof_replicas=0, flush="none",
            prefer_local=False, soft_pin=False, ttl_ms=0):
        """Store value (any bytes-like object: bytes, bytearray, memoryview,
        a numpy array; a non-contiguous one is copied first) as a new
        version of key: -> the version.  replicas DRAM copies and
        nvmeof_replicas NVMe-oF ones; flush "none", "lazy" (in the
        background) or "eager" (before put returns; FlushError if it
        failed); prefer_local: the first replica on this client's
        segment; soft_pin: evicted after unpinned objects; ttl_ms: removed
        that long after the put (0: never)."""
        k = _key(key)
        o = _put_opts(replicas, nvmeof_replicas, flush, prefer_local, soft_pin, ttl_ms)
        return self._c.put(k, value, o, False)

    def put_from(self, key, buffer, **opts):
        """put(), from a contiguous buffer as it is: no copy on the way
        (BufferError for a non-contiguous one); with register_buffer()
        the RDMA reads it where it lies.  Options as put()."""
        k = _key(key)
        return self._c.put(k, buffer, _put_opts(**opts), True)

    def get(self, key, default=_RAISE, *, min_version=-1):
        """The newest complete version of key, as bytes (at least
        min_version: else StoreError ERANGE, with largest_version).  A
        missing key raises NotFound, or returns default if given."""
        return self.get_with_version(key, default, min_version=min_version)[0]

    def get_with_version(self, key, default=_RAISE, *, min_version=-1):
        """get(), and the version read: -> (bytes, version); a missing key
        with a default gives (default, -1)."""
        k = _key(key)
        _count("min_version", min_version, -1, (1 << 63) - 1)
        try:
            return self._c.get(k, min_version)
        except NotFound:
            if default is _RAISE:
                raise
            return default, -1

    def get_into(self, key, buffer, *, offset=0, min_version=-1):
        """Read key's newest version from offset into buffer (writable and
        contiguous: a bytearray, a memoryview, a numpy array), no copy:
        -> the bytes read, at most len(buffer); an object larger than
        the buffer fills it and the rest is not read (stat() says the
        size).  TypeError for a read-only buffer."""
        k = _key(key)
        _count("offset", offset, 0, (1 << 64) - 1)
        _count("min_version", min_version, -1, (1 << 63) - 1)
        return self._c.get_into(k, buffer, min_version, offset)[0]

    def exists(self, key):
        """Whether key has a complete version."""
        return self._c.exists(_key(key)) >= 0

    def stat(self, key):
        """key's newest complete version: an ObjectInfo (NotFound)."""
        return ObjectInfo._of(self._c.stat(_key(key)))

    def remove(self, key, *, missing_ok=False):
        """Delete every version of key (NotFound if none, unless missing_ok)."""
        k = _key(key)
        try:
            self._c.remove(k)
        except NotFound:
            if not missing_ok:
                raise

    def remove_prefix(self, prefix):
        """Delete every key that starts with prefix (not empty): -> how many."""
        if not prefix:
            raise ValueError("remove_prefix of an empty prefix (every key) is refused")
        return self._c.remove_prefix(_key(prefix))

    def list(self, prefix="", *, limit=None):
        """ObjectInfo of every key with prefix, in key order (all pages;
        the first limit if given)."""
        p = _key(prefix) if prefix else b""
        if limit is not None:
            _count("limit", limit, 1, (1 << 32) - 1)
        out, after = [], b""
        while True:
            page, more = self._c.list(p, after, 0)
            out += [ObjectInfo._of(d) for d in page]
            if limit is not None and len(out) >= limit:
                return out[:limit]
            if not more or not page:
                return out
            after = page[-1]["key"]

    def set_attr(self, key, *, soft_pin=None, ttl_ms=None):
        """Pin or unpin key's newest version, or set its TTL counted from
        now (0: never expires); None leaves it.  The key's owner only."""
        k = _key(key)
        if ttl_ms is not None:
            _count("ttl_ms", ttl_ms, 0, TTL_MAX_MS)
        self._c.set_attr(k, None if soft_pin is None else bool(soft_pin), ttl_ms)

    # dict-like sugar
    def __contains__(self, key):
        return self.exists(key)

    def __getitem__(self, key):
        return self.get(key)

    def __setitem__(self, key, value):
        self.put(key, value)

    def __delitem__(self, key):
        self.remove(key)

    # -- registered memory -------------------------------------------------------

    def register_buffer(self, buffer):
        """Pin and RDMA-register buffer's memory once, for the put_from()s
        and get_into()s that use it (or any part of it): no bounce, no
        copy.  The store holds the buffer (a bytearray cannot resize)
        until unregister_buffer() or close()."""
        self._c.register_buffer(buffer)

    def unregister_buffer(self, buffer):
        self._c.unregister_buffer(buffer)

    # -- batches ------------------------------------------------------------------
    #
    # One task per BATCH_MAX keys, one round trip to the master each.  The
    # result is a list in the keys' order.  A missing key is an answer
    # (get_batch: None, exists_batch and remove_batch: False), not an
    # error; any other failure of a key raises BatchError once the whole
    # batch is done, with .results and .errors.  What fails every key (no
    # master, a bad argument) raises as the single call would.

    @staticmethod
    def _answer(keys, raw, ok, missing=_RAISE, what="batch"):
        rows, message = raw
        results, errors, first = [], {}, 0
        for key, row in zip(keys, rows):
            err = -row[0]
            if err == 0:
                results.append(ok(row))
                continue
            if err == _errno.ENOENT and missing is not _RAISE:
                results.append(missing)
                continue
            version = row[1] if what == "put" and len(row) > 1 and row[1] >= 0 else -1
            e = _make_error(err, os.strerror(err), key, version)
            e.key = key
            results.append(version if version >= 0 else None)
            errors[key] = e
            first = first or err
        if errors:
            raise BatchError(first, message or f"{len(errors)} of {len(keys)} keys failed",
                             results, errors)
        return results

    def put_batch(self, keys, values, **opts):
        """put() of each key with its value, all with the same options:
        -> their versions."""
        keys, ks = _keys(keys)
        values = list(values)
        if len(values) != len(ks):
            raise ValueError(f"{len(ks)} keys and {len(values)} values")
        if not ks:
            return []
        return self._answer(keys, self._c.put_batch(ks, values, _put_opts(**opts)),
                            lambda r: r[1], what="put")

    def get_batch(self, keys):
        """Each key's newest version as bytes, None for a missing key.  A
        stat per key, for the sizes, then one batch; get_batch_into()
        into buffers of known sizes is a single round trip."""
        keys, ks = _keys(keys)
        if not ks:
            return []
        return self._answer(keys, self._c.get_batch(ks), lambda r: r[1], None)

    def get_batch_into(self, keys, buffers):
        """get_into() of each key into its buffer (offset 0): -> the bytes
        read, None for a missing key."""
        keys, ks = _keys(keys)
        buffers = list(buffers)
        if len(buffers) != len(ks):
            raise ValueError(f"{len(ks)} keys and {len(buffers)} buffers")
        if not ks:
            return []
        return self._answer(keys, self._c.get_batch_into(ks, buffers), lambda r: r[1], None)

    def exists_batch(self, keys):
        """Whether each key has a complete version."""
        keys, ks = _keys(keys)
        if not ks:
            return []
        return self._answer(keys, self._c.exist_batch(ks), lambda r: True, False)

    def remove_batch(self, keys):
        """Delete each key: True, or False when it was not there."""
        keys, ks = _keys(keys)
        if not ks:
            return []
        return self._answer(keys, self._c.remove_batch(ks), lambda r: True, False)

    # -- async --------------------------------------------------------------------
    #
    # NAME_async(...) runs NAME(...) on the store's threads (as many as
    # its threads) and returns a concurrent.futures.Future at once; the
    # future's result() is what NAME returns or raises.  In asyncio:
    # await asyncio.wrap_future(s.get_async(k)).  The arguments (buffers
    # too) are held until the call is done.

    def _submit(self, fn, *args, **kw):
        with self._lock:
            if self.closed:
                raise ValueError("the store is closed")
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    max_workers=self._threads, thread_name_prefix="dsmem")
            return self._pool.submit(fn, *args, **kw)

    def put_async(self, key, value, **opts):
        return self._submit(self.put, key, value, **opts)

    def put_from_async(self, key, buffer, **opts):
        return self._submit(self.put_from, key, buffer, **opts)

    def get_async(self, key, default=_RAISE, *, min_version=-1):
        return self._submit(self.get, key, default, min_version=min_version)

    def get_into_async(self, key, buffer, **kw):
        return self._submit(self.get_into, key, buffer, **kw)

    def exists_async(self, key):
        return self._submit(self.exists, key)

    def remove_async(self, key, **kw):
        return self._submit(self.remove, key, **kw)

    def remove_prefix_async(self, prefix):
        return self._submit(self.remove_prefix, prefix)

    def put_batch_async(self, keys, values, **opts):
        return self._submit(self.put_batch, keys, values, **opts)

    def get_batch_async(self, keys):
        return self._submit(self.get_batch, keys)

    def get_batch_into_async(self, keys, buffers):
        return self._submit(self.get_batch_into, keys, buffers)

    def exists_batch_async(self, keys):
        return self._submit(self.exists_batch, keys)

    def remove_batch_async(self, keys):
        return self._submit(self.remove_batch, keys)
