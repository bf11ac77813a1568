"""Each rechunk task stays within the plan: its traced peak, in a fresh interpreter.

A child process runs the rechunk on the ``sync`` scheduler (one task at a time) under
``tracemalloc`` and a dask callback that resets the traced peak before each task and
reads it after; it prints the largest peak and the plan's estimate per task.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import chunkflow

CHILD = textwrap.dedent("""
    import json, sys, tracemalloc
    from dask.callbacks import Callback
    import chunkflow
    from chunkflow.graph.rechunk import prepare_rechunk

    class Peaks(Callback):
        def __init__(self):
            super().__init__()
            self.peak = 0
        def _pretask(self, key, dsk, state):
            tracemalloc.reset_peak()
            self.base = tracemalloc.get_traced_memory()[0]
        def _posttask(self, key, result, dsk, state, worker_id):
            self.peak = max(self.peak, tracemalloc.get_traced_memory()[1] - self.base)

    args = json.loads(sys.argv[1])
    src, out, chunks = args.pop("src"), args.pop("out"), tuple(args.pop("chunks"))
    if "selection" in args:
        args["selection"] = tuple(slice(*r) for r in args["selection"])
    plan = prepare_rechunk(src, chunks, scheduler="sync", **args).choice
    tracemalloc.start()
    with Peaks() as peaks:
        chunkflow.rechunk(src, chunks, out, scheduler="sync", **args)
    print(json.dumps({"peak": peaks.peak, "plan": plan.task_memory,
                      "passes": len(plan.passes)}))
""")


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> str:
    # Noise: incompressible, so encoded chunks are as large as decoded ones.
    data = np.random.default_rng(5).integers(0, 2**16, (32, 256, 512), dtype="u2")
    path = str(tmp_path_factory.mktemp("rechunk-memory") / "src.zarr")
    chunkflow.create_array(path, data=data, chunks=(1, 256, 512))
    return path


@pytest.mark.parametrize(("case", "passes"), [
    ({"chunks": [32, 32, 32], "max_memory": "12 MiB"}, 2),
    ({"chunks": [32, 32, 32], "max_memory": "48 MiB"}, 1),
    ({"chunks": [32, 16, 64], "max_memory": "12 MiB", "dtype": "f8"}, 2),
    # uint16 values into uint8: wrapped, as asked (the cast's memory is what is measured)
    ({"chunks": [8, 32, 32], "shards": [32, 64, 64], "max_memory": "12 MiB",
      "dtype": "u1", "casting": "unsafe"}, 2),
    # A region off the chunk edges: edge chunks are decoded apart, then copied.
    ({"chunks": [29, 30, 30], "max_memory": "12 MiB", "selection": [[3, 32], [10, 250]]}, 2),
])
@pytest.mark.slow
def test_every_task_peaks_within_the_plan(source: str, tmp_path: Path,
                                          case: dict[str, object], passes: int) -> None:
    args = {"src": source, "out": str(tmp_path / "out.zarr"), "temp": str(tmp_path / "t"),
            **case}
    child = subprocess.run([sys.executable, "-c", CHILD, json.dumps(args)],
                           capture_output=True, text=True, timeout=300, check=True)
    measured = json.loads(child.stdout.strip().splitlines()[-1])
    assert measured["passes"] == passes
    assert measured["peak"] <= measured["plan"], measured
    # The plan is not wildly pessimistic either: the largest task uses half of it.
    assert measured["peak"] >= measured["plan"] // 2, measured
