"""Scale by simulation: chunkflow's jobs over 10^3 to 10^6 chunks on a 2-worker cluster.

Run by hand (not part of the test suite), with nothing else running::

    python benchmarks/bench_scale.py [--quick] [--max-chunks N] [--ops map,reduce,...]

The source is a :class:`~chunkflow.testing.synthetic.SyntheticStore` (chunks computed
from their index, no storage: 32^2 uint16 chunks, 2 GiB at 10^6) and the output a
:class:`~chunkflow.testing.sink.ChecksumStore` (chunks checksummed and dropped), so
10^6 chunks fit on one machine. The cluster is ``distributed``'s, scheduler and 2
workers (one thread each) in processes of their own, so that the client's and the
scheduler's memory are measured apart.

For each size and job (``map`` x >> 1 into the sink, ``reduce`` mean + std,
``histogram`` of 64 bins, ``label`` of a lattice of dots, ~114 objects a chunk, and a
mean ``pyramid``), chunkflow and dask + zarr-python's equivalent (``da.map_blocks`` +
``da.store``, ``x.mean()``/``x.std()``, ``da.histogram``, dask-image's ``label`` when
installed, ``da.coarsen`` levels; the same chunks through a zarr-python store over the
same generator) record:

- ``build``: seconds to build the lazy graph, and the Python memory it allocated
  (tracemalloc peak, a second build);
- ``run``: seconds from ``client.compute`` to the result; ``wall`` = build + run;
- ``tasks``: tasks the scheduler ran (its task stream); ``sched. cpu ms``: the
  scheduler process's CPU time during the run, less what it uses idle (measured first,
  5 s), per task; ``idle ms``: thread seconds not spent computing, per task,
  ``(threads x run - busy) / tasks`` (waiting on the scheduler, and on the last tasks);
  ``worker cpu s``: the workers' CPU time (the work, with their own overhead);
- ``client`` and ``scheduler`` memory: peak RSS above the baseline before the job
  (sampled every 20 ms), and ``workers`` peak RSS.

Every result is checked (the checksum of what was written, the moments, the counts,
the number of objects, against the generator's formula). A peer whose time, grown
linearly from the size before, would pass ``--peer-limit`` seconds (120) is skipped,
and said so. Results go to ``benchmarks/scale.json`` and the plot to
``benchmarks/scale.png``.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import signal
import sys
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks import scale_cases  # noqa: E402

OPS = ("map", "reduce", "histogram", "label", "pyramid")

# Peers that cannot run at the smallest size within --peer-limit, and why (measured on
# this machine, threads, load ~13). --all-peers runs them.
PEER_SKIPS = {
    "label": ("dask-image's label grows ~quadratically with objects: 6.3 s at 16 chunks "
              "(1,849 objects), 47 s at 64 chunks (7,396); 10^3 chunks (1.1e5 objects) "
              "had not finished after 10 min"),
}
SIZES = (10**3, 10**4, 10**5, 10**6)


class PeakRSS:
    """The peak resident memory of some processes, sampled in a thread."""

    def __init__(self, pids: dict[str, int], every: float = 0.02) -> None:
        import psutil

        self.procs = {name: psutil.Process(pid) for name, pid in pids.items()}
        self.peak = {name: self._rss(p) for name, p in self.procs.items()}
        self.base = dict(self.peak)
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _rss(proc: Any) -> int:
        try:
            return int(proc.memory_info().rss)
        except Exception:  # a worker restarting: no sample
            return 0

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            for name, proc in self.procs.items():
                self.peak[name] = max(self.peak[name], self._rss(proc))

    def __enter__(self) -> PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _cpu(procs: dict[str, Any]) -> dict[str, float]:
    """CPU seconds (user + system) each process used so far."""
    seconds = {}
    for name, proc in procs.items():
        try:
            times = proc.cpu_times()
            seconds[name] = times.user + times.system
        except Exception:  # a worker restarting
            seconds[name] = 0.0
    return seconds


def idle_rate(pids: dict[str, int], seconds: float = 5.0) -> float:
    """The scheduler's CPU seconds per second with nothing to do (heartbeats, its
    monitors), subtracted from a job's scheduler CPU before dividing by its tasks."""
    import psutil

    procs = {"scheduler": psutil.Process(pids["scheduler"])}
    before = _cpu(procs)["scheduler"]
    time.sleep(seconds)
    return (_cpu(procs)["scheduler"] - before) / seconds


def measure(kind: str, op: str, nchunks: int, client: Any, pids: dict[str, int],
            traced: bool, idle: float = 0.0) -> dict[str, Any]:
    from distributed import get_task_stream

    builder = scale_cases.chunkflow_case if kind == "chunkflow" else scale_cases.dask_case
    gc.collect()
    with PeakRSS(pids) as rss:
        start, cpu_start = time.perf_counter(), time.process_time()
        built = builder(op, nchunks, client)
        build, build_cpu = time.perf_counter() - start, time.process_time() - cpu_start
        if built is None:
            return {"skipped": "no equivalent installed"}
        before = _cpu(rss.procs)
        start = time.perf_counter()
        with get_task_stream(client) as stream:
            result = client.compute(built.collection, sync=True)
        run = time.perf_counter() - start
        used = {name: seconds - before[name] for name, seconds in _cpu(rss.procs).items()}
    sink = built.sink
    tally = sink.collect(client) if sink is not None else None
    ok = built.check(result, tally)
    listed = getattr(built.source, "keys_listed", None)  # on the client, at build
    traced_peak = None
    if traced:
        del built, result
        gc.collect()
        tracemalloc.start()
        again = builder(op, nchunks, client)
        traced_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        del again
    if sink is not None:
        sink.reset(client)
    tasks = max(len(stream.data), 1)
    busy = sum(part["stop"] - part["start"] for task in stream.data
               for part in task["startstops"] if part["action"] == "compute")
    threads = sum(client.nthreads().values())
    mib = 2**20
    return {
        "chunks": nchunks, "build_s": build, "build_cpu_s": build_cpu, "run_s": run,
        "wall_s": build + run, "tasks": tasks, "busy_s": busy,
        "overhead_ms_per_task": 1e3 * (threads * run - busy) / tasks,
        "scheduler_cpu_s": used["scheduler"],
        "scheduler_ms_per_task": 1e3 * max(used["scheduler"] - idle * run, 0.0) / tasks,
        "scheduler_idle_cpu_per_s": idle,
        "workers_cpu_s": sum(v for k, v in used.items() if k.startswith("worker")),
        "client_run_cpu_s": used["client"],
        "build_traced_mib": None if traced_peak is None else traced_peak / mib,
        "client_mib": (rss.peak["client"] - rss.base["client"]) / mib,
        "scheduler_mib": (rss.peak["scheduler"] - rss.base["scheduler"]) / mib,
        "client_rss_mib": rss.peak["client"] / mib,
        "scheduler_rss_mib": rss.peak["scheduler"] / mib,
        "workers_rss_mib": sum(v for k, v in rss.peak.items() if k.startswith("worker")) / mib,
        "ok": bool(ok), "keys_listed": listed,
        "chunks_written": None if tally is None else tally.chunks,
    }


def _line(kind: str, op: str, figures: dict[str, Any]) -> str:
    if "skipped" in figures:
        return f"{op:9s} {kind:9s} {figures['chunks']:>9,}  skipped: {figures['skipped']}"
    traced = figures["build_traced_mib"]
    traced_text = "      -" if traced is None else f"{traced:7.1f}"
    return (f"{op:9s} {kind:9s} {figures['chunks']:>9,} {figures['build_s']:7.2f} "
            f"{figures['build_cpu_s']:7.2f} {figures['run_s']:7.1f} {figures['tasks']:>8,} "
            f"{figures['scheduler_ms_per_task']:6.2f} {figures['overhead_ms_per_task']:7.1f} "
            f"{figures['workers_cpu_s']:7.1f} {figures['client_mib']:6.0f} {traced_text} "
            f"{figures['scheduler_mib']:6.0f} {figures['keys_listed'] or 0:>9,} "
            f"{'ok' if figures['ok'] else 'WRONG'}")


HEADER = f"""\
{'':29s}  build    build     run             sched.    idle  worker client  build  sched.
{'job':9s} {'library':9s} {'chunks':>9s} {'s':>7s} {'cpu s':>7s} {'s':>7s} {'tasks':>8s} \
{'cpu ms':>6s} {'ms':>7s} {'cpu s':>7s} {'MiB':>6s} {'traced':>7s} {'MiB':>6s} {'listed':>9s} check
{'':60s}(per task)"""


def _peer_estimate(results: list[dict[str, Any]], op: str, nchunks: int) -> float | None:
    """The dask run's wall time at ``nchunks``, grown linearly from the largest size
    measured before (None: nothing measured)."""
    before = [r for r in results if r["op"] == op and r["library"] == "dask+zarr"
              and "wall_s" in r and r["chunks"] < nchunks]
    if not before:
        return None
    last = max(before, key=lambda r: r["chunks"])
    return last["wall_s"] * nchunks / last["chunks"]


def _skipped_before(results: list[dict[str, Any]], op: str) -> bool:
    return any(r["op"] == op and r["library"] == "dask+zarr" and "skipped" in r for r in results)


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    from distributed import Client
    from distributed.deploy.subprocess import SubprocessCluster

    sizes = [n for n in ((10**3, 10**4) if args.quick else SIZES) if n <= args.max_chunks]
    ops = [op for op in args.ops.split(",") if op]
    results: list[dict[str, Any]] = []
    with SubprocessCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                           silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        pids = {"client": os.getpid(), "scheduler": client.run_on_scheduler(os.getpid)}
        pids.update({f"worker{i}": pid for i, pid in enumerate(client.run(os.getpid).values())})
        for op in ops:  # once, unmeasured: imports and codecs on the workers
            measure("chunkflow", op, 10**3, client, pids, traced=False)
        idle = idle_rate(pids)
        print(f"load before: {os.getloadavg()}; scheduler idle CPU {1e3 * idle:.1f} ms/s",
              flush=True)
        print(HEADER, flush=True)
        for nchunks in sizes:
            for op in ops:
                for kind in ("chunkflow", "dask+zarr"):
                    figures: dict[str, Any] = {"chunks": nchunks}
                    estimate = _peer_estimate(results, op, nchunks)
                    if kind == "dask+zarr" and args.no_peers:
                        continue
                    if kind == "dask+zarr" and op in PEER_SKIPS and not args.all_peers:
                        figures["skipped"] = PEER_SKIPS[op]
                    elif kind == "dask+zarr" and _skipped_before(results, op):
                        figures["skipped"] = "skipped at a smaller size"
                    elif kind == "dask+zarr" and estimate is not None and estimate > args.peer_limit:
                        figures["skipped"] = (f"would take ~{estimate:.0f} s (linear from the size "
                                              f"before), over --peer-limit {args.peer_limit:.0f} s")
                    else:
                        figures.update(measure(kind, op, nchunks, client, pids,
                                               traced=not args.no_tracemalloc, idle=idle))
                    figures.update(op=op, library=kind, load=os.getloadavg()[0])
                    results.append(figures)
                    print(_line(kind, op, figures), flush=True)
                    _save(args.json, results)
        print(f"load after: {os.getloadavg()}", flush=True)
    return results


def _save(path: Path, results: list[dict[str, Any]]) -> None:
    path.write_text(json.dumps({"load": os.getloadavg(), "results": results}, indent=1))


def plot(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measured = [r for r in results if "skipped" not in r]
    ops = list(dict.fromkeys(r["op"] for r in measured))
    # Times and counts on log-log axes; memory above the baseline before each job on a
    # symlog axis (chunkflow's is often 0 MiB, which a log axis cannot show).
    metrics = (("wall_s", "wall time (s)", "log"), ("workers_cpu_s", "workers' CPU (s)", "log"),
               ("build_s", "graph build (s)", "log"), ("tasks", "tasks", "log"),
               ("client_mib", "client RSS +MiB", "symlog"),
               ("scheduler_mib", "scheduler RSS +MiB", "symlog"))
    fig, axes = plt.subplots(len(metrics), len(ops), figsize=(3.2 * len(ops), 2.3 * len(metrics)),
                             squeeze=False, sharex=True)
    for col, op in enumerate(ops):
        for row, (metric, label, scale) in enumerate(metrics):
            ax = axes[row][col]
            for kind, style in (("chunkflow", "o-"), ("dask+zarr", "s--")):
                points = [(r["chunks"], max(r[metric], 0.0)) for r in measured
                          if r["op"] == op and r["library"] == kind]
                if points:
                    ax.plot(*zip(*points), style, label=kind)
            ax.set_xscale("log")
            if scale == "symlog":
                ax.set_yscale("symlog", linthresh=1.0)
                ax.set_ylim(-0.5, max(10.0, ax.get_ylim()[1]))
            else:
                ax.set_yscale("log")
            ax.grid(True, which="both", alpha=0.3)
            if row == 0:
                ax.set_title(op)
            if col == 0:
                ax.set_ylabel(label)
            if row == len(metrics) - 1:
                ax.set_xlabel("chunks")
    axes[0][0].legend(fontsize="small")
    fig.suptitle("chunkflow vs dask + zarr-python, 2-worker cluster, synthetic 32^2 uint16 chunks")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10^3 and 10^4 chunks only")
    parser.add_argument("--max-chunks", type=int, default=10**6)
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument("--no-peers", action="store_true", help="chunkflow alone")
    parser.add_argument("--all-peers", action="store_true",
                        help="run the peers of PEER_SKIPS too (dask-image's label)")
    parser.add_argument("--peer-limit", type=float, default=120.0,
                        help="skip a peer expected to take longer (seconds)")
    parser.add_argument("--no-tracemalloc", action="store_true",
                        help="skip the second, traced build")
    parser.add_argument("--replot", action="store_true",
                        help="only draw the plot of the results in --json")
    parser.add_argument("--json", type=Path, default=HERE / "scale.json")
    parser.add_argument("--plot", type=Path, default=HERE / "scale.png")
    args = parser.parse_args()
    if args.replot:
        plot(json.loads(args.json.read_text())["results"], args.plot)
        return
    # A kill closes the cluster (its scheduler and workers are processes of their own).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results = run(args)
    _save(args.json, results)
    plot(results, args.plot)
    print(f"wrote {args.json} and {args.plot}")


if __name__ == "__main__":
    main()
