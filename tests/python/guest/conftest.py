# SPDX-License-Identifier: BSD-2-Clause
"""The store the guest tests run against, once per run: TLS certificates
(scripts/store-certs), three dsmem nodes on rxe0 (the master's and two
clients'), a dsmaster with a file log and a slow tier, and two Stores,
each lending 64 MiB.  Run as root inside a guest of scripts/guest (it
reads DSMEM_LOCAL_ADDR), by tests/python/run guest."""
import os
import signal
import subprocess
import sys
import time

import pytest

import dsmem

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BUILD = os.path.join(TOP, "build", "user")
DSCTL = os.path.join(BUILD, "user", "tools", "dsctl")
DSMASTER = os.path.join(BUILD, "user", "tools", "dsmaster", "dsmaster")
DIR = "/tmp/dsmem-py-test"
MASTERS = "127.0.0.1:7730"
MASTER_NODE = 46
CLIENT_NODES = (47, 48)
SPARE_NODE = 49                  # a third Store a test opens and closes
EXAMPLE_NODE = 45                # examples/kvcache.py's
NODE_PORT = 7600                 # node n listens on NODE_PORT + n (as store_test)
MAX_OBJECT = 8 << 20             # the master's --max-object-size
# the selftests' key (tests/kselftest/util.c): every node proves it
CLUSTER_KEY = b"dsmem test cluster key, 32 bytes"


def log(msg):
    """a "# " line in the TAP stream (pytest captures stderr)"""
    try:
        import tap
        tap._comment(msg)
    except ImportError:
        sys.stderr.write(f"# {msg}\n")


def sh(*argv, check=True):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if check and r.returncode:
        raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}: {r.stdout.strip()}")
    return r.stdout


def node_del(n):
    sh(DSCTL, "node", "del", "id", str(n), check=False)


class Env:
    masters = MASTERS
    max_object = MAX_OBJECT
    spare_node = SPARE_NODE
    example_node = EXAMPLE_NODE
    top = TOP
    addr = None
    stores = ()
    master = None


@pytest.fixture(scope="session")
def env(request):
    addr = os.environ.get("DSMEM_LOCAL_ADDR")
    if os.geteuid() != 0 or not addr:
        pytest.skip("needs root in a test guest (scripts/guest: DSMEM_LOCAL_ADDR)")
    e = Env()
    e.addr = addr
    t0 = time.monotonic()
    for n in (MASTER_NODE, *CLIENT_NODES, SPARE_NODE, EXAMPLE_NODE):
        node_del(n)
    sh("rm", "-rf", DIR)
    os.makedirs(f"{DIR}/slow")
    os.makedirs(f"{DIR}/master")
    tls = f"{DIR}/tls"
    sh(os.path.join(TOP, "scripts", "store-certs"), "init", tls, addr)
    # the Stores (and master_info) find theirs here, as the C clients do
    os.environ["DSMEM_STORE_TLS_DIR"] = tls
    with open(os.open(f"{DIR}/key", os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
        f.write(CLUSTER_KEY)
    sh(DSCTL, "key", "add", "name", "cluster", "file", f"{DIR}/key", "replace")
    for n in (MASTER_NODE, *CLIENT_NODES, SPARE_NODE, EXAMPLE_NODE):
        sh(DSCTL, "node", "add", "id", str(n), "dev", "rxe0", "port", str(NODE_PORT + n))
    mlog = open(f"{DIR}/master.log", "w")
    e.master = subprocess.Popen(
        [DSMASTER, "--listen", MASTERS, "--node", str(MASTER_NODE), "--addr", addr,
         "--port", str(NODE_PORT + MASTER_NODE),
         "--tls-ca", f"{tls}/ca.crt", "--tls-cert", f"{tls}/master.crt",
         "--tls-key", f"{tls}/master.key",
         "--data-dir", f"{DIR}/master", "--slow-tier", f"dir:{DIR}/slow",
         "--max-object-size", str(MAX_OBJECT), "--gc-ms", "200", "--flush-ms", "200",
         # another master of the guest may hold the default port
         "--metrics-listen", "none", "-v"],
        stdout=mlog, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if dsmem.master_info(MASTERS)["leader"]:
                    break
            except dsmem.StoreError as err:
                if time.monotonic() > deadline or e.master.poll() is not None:
                    raise RuntimeError(f"dsmaster did not lead: {err}") from err
            time.sleep(0.3)
        t1 = time.monotonic()
        e.stores = tuple(dsmem.Store(MASTERS, n, "64M") for n in CLIENT_NODES)
        # the two clients' nodes connect to each other (the higher id
        # dials): a put of two replicas succeeds once they have
        deadline = time.monotonic() + 60
        while True:
            try:
                e.stores[1].put("py/warmup", b"w", replicas=2)
                e.stores[0].put("py/warmup", b"w", replicas=2)
                break
            except dsmem.StoreError as err:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the two clients did not connect: {err}") from err
                time.sleep(0.5)
        log(f"store up in {time.monotonic() - t0:.1f} s (master {t1 - t0:.1f} s)")
        yield e
    finally:
        failed = request.session.testsfailed
        for s in e.stores:
            s.close()
        e.master.send_signal(signal.SIGTERM)
        try:
            e.master.wait(20)
        except subprocess.TimeoutExpired:
            e.master.kill()
            e.master.wait()
        mlog.close()
        if failed:
            with open(f"{DIR}/master.log") as f:
                for line in f.readlines()[-40:]:
                    log("master: " + line.rstrip())
        for n in (MASTER_NODE, *CLIENT_NODES, SPARE_NODE, EXAMPLE_NODE):
            node_del(n)
        sh("rm", "-rf", DIR)


@pytest.fixture
def s(env):
    """the first client"""
    return env.stores[0]


@pytest.fixture
def s2(env):
    """the second client (another node, another segment)"""
    return env.stores[1]
