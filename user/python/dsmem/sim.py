# SPDX-License-Identifier: BSD-2-Clause
"""dsmem.sim: the cache simulator from Python, and sweeps on a Dask cluster.

``run`` is ``dsctl -j sim run`` as a call: the same keywords, the same
record (a dict), from the same code (the extension runs dsctl's)::

    from dsmem import sim
    r = sim.run(trace="t.bin", policy=["lru", "s3fifo"], size=["1%", "10%"])
    r["runs"][0]["miss_ratio"]

``sweep`` runs every policy at every size on every trace of a list or a
directory, one task per trace and policy, on a ``dask.distributed``
client when one is given (a cluster's scheduler, or a LocalCluster of
worker processes), and gathers the runs into one table: a list of dicts,
one per trace, policy and size.  ``write_csv`` and ``plot`` write it.
From a shell::

    python3 -m dsmem.sim TRACE_DIR --policy lru,s3fifo,seed --size 1%,10% \\
        --workers 4 --csv sweep.csv --plot sweep.png
    python3 -m dsmem.sim TRACE_DIR ... --scheduler tcp://10.0.0.1:8786

docs/sim.md has the keywords; dsctl-sim(8) the policies and trace formats.
"""

import csv
import json
import os
import shutil
import socket
import subprocess
import tempfile

from . import _dsmem

__all__ = ["run", "sweep", "trace_files", "write_csv", "plot", "COLUMNS"]

# the table's columns, in order
COLUMNS = ["trace", "policy", "size", "unit", "requests", "miss_ratio",
           "byte_miss_ratio", "l1_ratio", "mean_ns", "mreqs_per_s", "worker"]


def _word(value):
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def run(trace=None, gen=None, **keywords):
    """One ``dsctl -j sim run``: trace (a file) or gen (a generator spec),
    and its other keywords by name (lists join with commas).  Returns the
    record; raises ValueError with dsctl's message on what it refuses."""
    if (trace is None) == (gen is None):
        raise ValueError("give trace or gen, not both or neither")
    words = ["trace", os.fspath(trace)] if trace is not None else ["gen", gen]
    for key, value in keywords.items():
        if key in ("trace", "gen"):
            raise ValueError(f"{key} is an argument of its own")
        words += [key, _word(value)]
    return json.loads(_dsmem.sim_run(words))


def trace_files(directory):
    """The regular files of a directory, by name: a sweep's traces (not
    hidden files, READMEs or Markdown, which trace directories carry)."""
    names = sorted(os.listdir(directory))
    return [os.path.join(directory, n) for n in names
            if not n.startswith((".", "README")) and not n.endswith(".md")
            and os.path.isfile(os.path.join(directory, n))]


def _rows(trace, record, worker):
    rows = []
    for r in record["runs"]:
        tiers = {t["tier"]: t["ratio"] for t in r.get("tiers", [])}
        rows.append({
            "trace": os.path.basename(trace),
            "policy": r["policy"],
            "size": r["size"],
            "unit": r["unit"],
            "requests": r["requests"],
            "miss_ratio": r["miss_ratio"],
            "byte_miss_ratio": r["byte_miss_ratio"],
            # a single-tier policy's L1 is the cache
            "l1_ratio": tiers.get("l1", 1.0 - r["miss_ratio"]),
            "mean_ns": r["mean_ns"],
            "mreqs_per_s": r["mreqs_per_s"],
            "worker": worker,
        })
    return rows


def _task(trace, policy, sizes, keywords):
    """One trace, one policy, every size: the rows, and who ran them."""
    record = run(trace=trace, policy=policy, size=sizes, threads=1, **keywords)
    return _rows(trace, record, f"{socket.gethostname()}:{os.getpid()}")


def sweep(traces, policy, size, client=None, **keywords):
    """Every policy at every size on every trace (a list of files, or a
    directory's), one task per trace and policy: on client (a
    dask.distributed Client) when given, else here, one after another.
    Further keywords go to every run (format, latency, params, ...).
    Returns the table, in the order of traces, then policies, then sizes."""
    if isinstance(traces, (str, os.PathLike)):
        traces = trace_files(traces)
    traces = [os.fspath(t) for t in traces]
    policies = [policy] if isinstance(policy, str) else list(policy)
    if not traces or not policies:
        raise ValueError("a sweep needs traces and policies")
    sizes = _word(size)
    jobs = [(t, p) for t in traces for p in policies]
    if client is None:
        parts = [_task(t, p, sizes, keywords) for t, p in jobs]
    else:
        # pure=False: the same arguments twice are two runs, not one
        futures = [client.submit(_task, t, p, sizes, keywords, pure=False)
                   for t, p in jobs]
        parts = client.gather(futures)
    return [row for part in parts for row in part]


def write_csv(rows, path):
    """The table as CSV, a header line first."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)


def plot(rows, path):
    """Miss ratio against size, a line per policy, a panel per trace:
    a PNG through gnuplot (Debian's gnuplot-nox)."""
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        raise RuntimeError("gnuplot not found (Debian's gnuplot-nox)")
    traces = list(dict.fromkeys(r["trace"] for r in rows))
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    if not traces:
        raise ValueError("nothing to plot")
    cols = min(len(traces), 3)
    lines = (len(traces) + cols - 1) // cols
    with tempfile.TemporaryDirectory() as tmp:
        script = [
            f"set terminal pngcairo size {420 * cols},{320 * lines} noenhanced",
            f"set output {json.dumps(os.fspath(path))}",
            f"set multiplot layout {lines},{cols}",
            "set key top right", "set yrange [0:1]", "set ylabel 'miss ratio'",
            "set xlabel 'size'", "set logscale x", "set grid",
        ]
        for i, t in enumerate(traces):
            plots = []
            for j, p in enumerate(policies):
                data = os.path.join(tmp, f"{i}-{j}.dat")
                pts = sorted((r["size"], r["miss_ratio"]) for r in rows
                             if r["trace"] == t and r["policy"] == p)
                with open(data, "w") as f:
                    f.writelines(f"{s} {m}\n" for s, m in pts)
                plots.append(f"{json.dumps(data)} using 1:2 with linespoints "
                             f"title {json.dumps(p)}")
            script.append(f"set title {json.dumps(t)}")
            script.append("plot " + ", ".join(plots))
        script.append("unset multiplot")
        done = subprocess.run([gnuplot], input="\n".join(script) + "\n", text=True,
                              capture_output=True)
        if done.returncode:
            raise RuntimeError("gnuplot: " + done.stderr.strip())


def main(argv=None):
    """python3 -m dsmem.sim TRACES... --policy P,... --size S,... [--workers N |
    --scheduler ADDR] [--csv FILE] [--plot FILE] [--format F]"""
    import argparse
    import sys

    ap = argparse.ArgumentParser(prog="python3 -m dsmem.sim",
                                 description="A cache-simulator sweep over traces, on Dask.")
    ap.add_argument("traces", nargs="+", help="trace files, or directories of them")
    ap.add_argument("--policy", required=True, help="policies, comma-separated (dsctl-sim(8))")
    ap.add_argument("--size", required=True, help="sizes, comma-separated (1000, 64M, 1%%)")
    ap.add_argument("--format", help="the traces' format, when not detected")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, default=0,
                       help="a local Dask cluster of this many worker processes")
    where.add_argument("--scheduler", help="a Dask scheduler's address (tcp://host:8786)")
    ap.add_argument("--csv", help="write the table here")
    ap.add_argument("--plot", help="write a PNG of miss ratio against size here")
    a = ap.parse_args(argv)

    traces = []
    for t in a.traces:
        traces += trace_files(t) if os.path.isdir(t) else [t]
    keywords = {"format": a.format} if a.format else {}
    client = cluster = None
    try:
        if a.workers or a.scheduler:
            from dask.distributed import Client, LocalCluster
            if a.scheduler:
                client = Client(a.scheduler)
            else:
                cluster = LocalCluster(n_workers=a.workers, threads_per_worker=1,
                                       processes=True, dashboard_address=None)
                client = Client(cluster)
        rows = sweep(traces, a.policy.split(","), a.size, client=client, **keywords)
    except (ValueError, OSError) as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
    if a.csv:
        write_csv(rows, a.csv)
    if a.plot:
        plot(rows, a.plot)
    w = csv.DictWriter(sys.stdout, fieldnames=COLUMNS[:-1], extrasaction="ignore",
                       delimiter="\t", lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
