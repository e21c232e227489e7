# SPDX-License-Identifier: BSD-2-Clause
"""dsmem.sim: the simulator's record from Python is dsctl's, and a sweep
over a directory of traces on a local Dask cluster of worker processes
gives the table a sweep here gives, gathered from several processes."""
import csv
import json
import os
import pathlib
import subprocess
import sys

import pytest

from dsmem import sim

TOP = pathlib.Path(__file__).resolve().parents[3]
DSCTL = TOP / "build" / "user" / "user" / "tools" / "dsctl"
SPECS = [
    "zipf:alpha=0.9,objects=2000,requests=40k,seed=1",
    "zipf:alpha=0.6,objects=5000,requests=40k,seed=2",
    "loop:objects=3000,requests=30k",
]
POLICIES = ["lru", "s3fifo", "seed"]
SIZES = ["1%", "10%"]


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("traces")
    for i, spec in enumerate(SPECS):
        subprocess.run([DSCTL, "sim", "gen", spec, "file", d / f"t{i}.oracleGeneral.bin"], check=True,
                       capture_output=True)
    return d


def timeless(runs):
    """A record's runs without what the machine's speed decides."""
    return [{k: v for k, v in r.items() if k not in ("seconds", "mreqs_per_s")}
            for r in runs]


def test_run_is_dsctls_record(traces):
    t = traces / "t0.oracleGeneral.bin"
    mine = sim.run(trace=t, policy=POLICIES, size=SIZES, window=5000)
    out = subprocess.run([DSCTL, "-j", "sim", "run", "trace", t, "policy", ",".join(POLICIES),
                          "size", ",".join(SIZES), "window", "5000"],
                         check=True, capture_output=True, text=True).stdout
    theirs = json.loads(out)
    assert mine["trace"] == theirs["trace"]
    assert len(mine["runs"]) == len(POLICIES) * len(SIZES)
    assert timeless(mine["runs"]) == timeless(theirs["runs"])


def test_run_refuses_what_dsctl_refuses():
    with pytest.raises(ValueError, match='unknown policy "nope"'):
        sim.run(gen="zipf:objects=100,requests=1k", policy="nope")
    with pytest.raises(ValueError, match="l1_capacity 5000000 is above its limit"):
        sim.run(gen="zipf:objects=100,requests=1k", policy="seed", size=5000000)
    with pytest.raises(ValueError, match="bogus"):
        sim.run(gen="zipf:objects=100,requests=1k", bogus=1)
    with pytest.raises(ValueError, match="trace or gen"):
        sim.run(trace="a", gen="b")
    with pytest.raises(ValueError, match="cannot|No such|open"):
        sim.run(trace="/nonexistent/trace.bin")


def test_sweep_on_a_local_dask_cluster(traces, tmp_path):
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=3, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        rows = sim.sweep(traces, POLICIES, SIZES, client=client)
    here = sim.sweep(traces, POLICIES, SIZES)

    assert len(rows) == len(SPECS) * len(POLICIES) * len(SIZES)
    # the same table, in the same order, wherever it ran
    def strip(rs):
        return [{k: v for k, v in r.items() if k not in ("worker", "mreqs_per_s")} for r in rs]
    assert strip(rows) == strip(here)
    assert [r["trace"] for r in rows[:len(POLICIES) * len(SIZES)]] == ["t0.oracleGeneral.bin"] * 6
    # worker processes did it, more than one of them, none of them this one
    workers = {r["worker"] for r in rows}
    assert len(workers) >= 2, workers
    assert all(not w.endswith(f":{os.getpid()}") for w in workers)
    # a miss is a request L1 did not serve, for the tiered seed too
    assert all(abs(r["l1_ratio"] + r["miss_ratio"] - 1) < 2e-4 for r in rows)

    sim.write_csv(rows, tmp_path / "sweep.csv")
    with open(tmp_path / "sweep.csv", newline="") as f:
        back = list(csv.DictReader(f))
    assert len(back) == len(rows)
    assert list(back[0].keys()) == sim.COLUMNS
    assert float(back[0]["miss_ratio"]) == rows[0]["miss_ratio"]
    sim.plot(rows, tmp_path / "sweep.png")
    assert (tmp_path / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_command_line(traces, tmp_path):
    env = dict(os.environ)
    cmd = [sys.executable, "-m", "dsmem.sim", str(traces), "--policy", "lru,fifo",
           "--size", "10%", "--workers", "2", "--csv", str(tmp_path / "t.csv"),
           "--plot", str(tmp_path / "t.png")]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split("\t") == sim.COLUMNS[:-1]
    assert len(lines) == 1 + len(SPECS) * 2
    assert (tmp_path / "t.png").exists()
    bad = subprocess.run(cmd[:4] + ["--policy", "nope", "--size", "10%"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert bad.returncode == 1
    assert bad.stderr.startswith('Error: unknown policy "nope"')
