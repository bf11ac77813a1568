"""Resumable jobs: what the bookkeeping costs, what a resume saves, and its scale on S3.

Run by hand (not part of the test suite), with nothing else running::

    python benchmarks/bench_resume.py [--repeat 3] [--quick]

A map_chunks job of 10^4 blocks (32^2 = 1024 with ``--quick``): a Gaussian filter
(sigma 1, halo 4) of a uint16 image in 64^2 chunks into float32, one chunk per block,
folder to folder, on the threaded scheduler. Cases:

- ``overhead``: every job is recorded (its mark and one record per block), with
  ``resume=True`` or not. The job as it runs by default (recorded, without
  ``resume=True``) and with ``resume=True`` against the same job with recording
  switched off (:func:`chunkflow.jobs.not_recorded`; fresh output each run, the three
  interleaved); goal: recording at most 3% slower.
- ``killed at 50%``: the job runs with ``resume=True`` in a child process that is
  SIGKILLed once half of the blocks are recorded; a resume in a fresh process is
  timed against a full run in a fresh process (both timed inside the child, from the
  call to its return); goal: at most 60% of the full run.
- ``requests on S3``: the job (256 blocks) over a moto S3 server behind a counting
  :class:`~chunkflow.testing.FaultProxy`, with and without ``resume``; the requests the
  bookkeeping adds (per block, and to find what is done) are scaled to 10^6 blocks.

Every time is the median of ``--repeat`` runs, with the range in brackets.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from bench_graph import _median  # noqa: E402

CHUNK = 64
DEPTH = 4
RECORDS = ".chunkflow-job"
JOB_ATTRIBUTE = "chunkflow_job"  # the unfinished job's mark in the output's attributes
LISTED = 3000  # records listed to measure what finding what is done costs


def _filter(window: np.ndarray) -> np.ndarray:
    from scipy import ndimage

    return ndimage.gaussian_filter(window, 1.0, mode="reflect", output=np.float32)


def _make(path: str, side: int, storage_options: dict | None = None) -> None:
    import chunkflow

    z = chunkflow.create((side, side), chunks=(CHUNK, CHUNK), dtype="u2", store=path,
                         storage_options=storage_options)
    rng = np.random.default_rng(0)
    for row in range(0, side, CHUNK * 8):
        z[row:row + CHUNK * 8] = rng.integers(0, 4096, (min(CHUNK * 8, side - row), side),
                                              dtype="u2")


def _job(source: str, target: str, resume: bool, storage_options: dict | None = None,
         recorded: bool = True) -> float:
    """Run the job (``recorded=False``: with recording switched off); its time in s."""
    import contextlib

    import chunkflow
    from chunkflow.jobs import not_recorded

    start = time.perf_counter()
    with contextlib.nullcontext() if recorded else not_recorded():
        chunkflow.map_chunks(_filter, source, out=target, depth=DEPTH, dtype="f4",
                             blocks=(1, 1), resume=resume, scheduler="threads",
                             storage_options=storage_options)
    return time.perf_counter() - start


def _child(source: str, target: str) -> None:
    """A child process: the resumable job; prints its time."""
    print(json.dumps({"seconds": _job(source, target, resume=True)}), flush=True)


def _spawn(source: str, target: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, __file__, "--child", source, target],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})


def _seconds(proc: subprocess.Popen[str]) -> float:
    out, err = proc.communicate()
    if proc.returncode:
        raise RuntimeError(f"the job process failed:\n{err[-2000:]}")
    return float(json.loads(out.strip().splitlines()[-1])["seconds"])


def _tasks(target: Path) -> int | None:
    """The job's task count, from the mark in the output's attributes (``None``: no
    mark yet). map_chunks runs groups of blocks per task and records tasks."""
    try:
        document = json.loads((target / "zarr.json").read_text())
    except (OSError, ValueError):
        return None
    mark = document.get("attributes", {}).get(JOB_ATTRIBUTE)
    return math.prod(mark["grid"]) if mark else None


def _records(target: Path) -> int:
    folder = target / RECORDS
    if not folder.exists():
        return 0
    return sum(len(os.listdir(token)) for token in folder.iterdir())


def overhead(source: str, scratch: Path, repeat: int
             ) -> tuple[list[float], list[float], list[float]]:
    """Times not recorded, recorded (the default) and with ``resume=True``."""
    off: list[float] = []
    recorded: list[float] = []
    resumed: list[float] = []
    cases = ((False, False, off), (False, True, recorded), (True, True, resumed))
    for run in range(repeat):
        # The order rotates from run to run: whichever case runs first in a round
        # pays for warming up (measured: up to 20%), which must not count as recording.
        for resume, record, times in cases[run % 3:] + cases[:run % 3]:
            target = scratch / f"overhead-{run}-{resume}-{record}.zarr"
            times.append(_job(source, str(target), resume, recorded=record))
            shutil.rmtree(target)
    return off, recorded, resumed


def killed_half_way(source: str, scratch: Path, blocks: int, repeat: int
                    ) -> tuple[list[float], list[float], list[float]]:
    """Full runs, resumes after a kill at 50%, and the share of blocks left each time."""
    full, resumed, left = [], [], []
    for run in range(repeat):
        target = scratch / f"full-{run}.zarr"
        full.append(_seconds(_spawn(source, str(target))))
        shutil.rmtree(target)
        target = scratch / f"killed-{run}.zarr"
        proc = _spawn(source, str(target))
        tasks = None
        while proc.poll() is None and (tasks is None or _records(target) < tasks // 2):
            time.sleep(0.005)
            tasks = tasks or _tasks(target)
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        left.append(1 - _records(target) / (tasks or 1))
        resumed.append(_seconds(_spawn(source, str(target))))
        shutil.rmtree(target)
    return full, resumed, left


# ------------------------------------------------------------------ S3 requests


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def s3_requests(side: int) -> dict[str, Counter[str]]:
    """Requests of the job over moto S3, by method, without and with ``resume``, and
    of listing :data:`LISTED` records (what a resume does to find what is done)."""
    import logging

    import fsspec
    from moto.server import ThreadedMotoServer

    from chunkflow.storage import FsspecStore
    from chunkflow.testing import FaultProxy

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    counts: dict[str, Counter[str]] = {}
    try:
        base = {"key": "bench", "secret": "bench", "client_kwargs": {"region_name": "us-west-2"}}
        with FaultProxy(f"http://127.0.0.1:{port}") as proxy:
            options = {**base, "endpoint_url": proxy.url}
            fsspec.filesystem("s3", skip_instance_cache=True, **options).mkdir("bench")
            root = f"s3://bench/{uuid.uuid4().hex}"
            _make(f"{root}/src.zarr", side, options)
            # A first run pays for what the next ones find cached (HEADs of the source).
            _job(f"{root}/src.zarr", f"{root}/warm.zarr", False, options)
            for name, resume in (("plain", False), ("resume", True)):
                proxy.reset()
                _job(f"{root}/src.zarr", f"{root}/{name}.zarr", resume, options,
                     recorded=resume)
                counts[name] = Counter(proxy.requests)
            # Finding what is done is one listing of the records folder: list 3000
            # records the way a resume does.
            store = FsspecStore(f"{root}/listed.zarr", storage_options=options)
            store.set_many({f"{RECORDS}/token/b{i}.0": b"" for i in range(LISTED)})
            proxy.reset()
            start = time.perf_counter()
            assert len(list(store.list_prefix(RECORDS))) == LISTED
            counts["find-done"] = Counter(proxy.requests)
            counts["find-done"]["seconds"] = time.perf_counter() - start  # type: ignore[assignment]
    finally:
        server.stop()
    return counts


def _per_block(counts: dict[str, Counter[str]], blocks: int) -> str:
    extra = {m: counts["resume"][m] - counts["plain"][m] for m in counts["resume"]}
    return ", ".join(f"{m} {n / blocks:+.2f}" for m, n in sorted(extra.items()) if n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1024 blocks instead of 10^4")
    parser.add_argument("--overhead", action="store_true",
                        help="only the cost of recording (no kill, no S3)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    side = CHUNK * (32 if args.quick else 100)
    blocks = (side // CHUNK) ** 2
    scratch = Path(tempfile.mkdtemp(prefix="chunkflow-bench-resume-"))
    try:
        source = str(scratch / "src.zarr")
        _make(source, side)
        print(f"map_chunks: Gaussian filter of {side}^2 uint16 in {CHUNK}^2 chunks, "
              f"{blocks} blocks, threads; median [range] of {args.repeat} runs")
        off, recorded, resumed = overhead(source, scratch, args.repeat)
        print(f"  not recorded          {_median(off)} s")
        for name, times in (("recorded (default)", recorded), ("resume=True", resumed)):
            ratio = np.median(times) / np.median(off) - 1
            pairs = [t / o - 1 for t, o in zip(times, off)]
            print(f"  {name:20s}  {_median(times)} s   overhead {ratio:+.1%} (run by run "
                  f"{min(pairs):+.1%} to {max(pairs):+.1%}; goal <= +3%)")
        if args.overhead:
            return
        full, again, left = killed_half_way(source, scratch, blocks, args.repeat)
        share = np.median(again) / np.median(full)
        print(f"  full run (process)    {_median(full)} s")
        print(f"  resume after a kill   {_median(again)} s   {share:.0%} of a full run "
              f"(goal <= 60%); tasks left at the kill: {np.median(left):.0%}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    s3_side = CHUNK * 16
    s3_blocks = (s3_side // CHUNK) ** 2
    counts = s3_requests(s3_side)
    print(f"\nS3 (moto behind a counting proxy), {s3_blocks} blocks: requests by method")
    for name in ("plain", "resume", "find-done"):
        print(f"  {name:10s} {dict(sorted(counts[name].items()))}")
    print(f"  bookkeeping per block (resume against not recorded): "
          f"{_per_block(counts, s3_blocks)} (the record; "
          "and per job: the mark written and removed, one listing, one batched delete)")
    listed = counts["find-done"]
    pages = listed["GET"]
    seconds = float(listed["seconds"])
    print(f"  finding what is done: {pages} LIST requests for {LISTED} records "
          f"({seconds:.2f} s on moto)")
    print(f"  at 10^6 blocks: 10^6 records (empty objects; one PUT per block; deleted "
          f"with the job, 1000 per DeleteObjects request); finding what is done: "
          f"{pages * 10**6 // LISTED} LIST requests (pages of 1000 keys, one after another: "
          f"{seconds / pages * 1000:.0f} s on moto, about 30-60 s on S3 at 30-60 ms a page), "
          "against 10^6 requests to check each block's chunk")

if __name__ == "__main__":
    main()
