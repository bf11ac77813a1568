"""find_objects and per-label median: chunkflow.ndimage against scipy.ndimage in memory.

Run by hand (not part of the test suite)::

    python benchmarks/bench_ndimage_tables.py [--repeat 3] [--side 2048] [--labels 10000]

The labels are a grid of square tiles (``--labels`` of them, numbered in a random
order) on a ``--side``² image; the values are random float64. chunkflow reads both
from in-memory chunkflow arrays of 512² chunks with the threaded scheduler; scipy
takes the numpy arrays. Each result is checked against scipy's (boxes equal, medians
bit for bit) before it is timed. Printed: medians over ``--repeat`` runs with their
range, and chunkflow's ratio to scipy, and the load (``/proc/loadavg``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.ndimage as ndi

import chunkflow
from chunkflow import ndimage


def _data(side: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    per = max(1, int(round(count ** 0.5)))
    tile = -(-side // per)
    rows = np.arange(side) // tile
    grid = rows[:, None] * per + rows[None, :]
    numbers = rng.permutation(per * per) + 1
    return numbers[grid].astype(np.int32), rng.random((side, side))


def _time(call: Callable[[], Any], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times


def _show(name: str, peer: list[float], ours: list[float]) -> None:
    def fmt(t: list[float]) -> str:
        return f"{statistics.median(t):7.3f} s [{min(t):.3f}-{max(t):.3f}]"
    print(f"{name:14s} scipy {fmt(peer)}   chunkflow {fmt(ours)}   "
          f"ratio {statistics.median(ours) / statistics.median(peer):5.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--side", type=int, default=2048)
    parser.add_argument("--labels", type=int, default=10000)
    args = parser.parse_args()
    labels, values = _data(args.side, args.labels)
    index = np.arange(1, int(labels.max()) + 1)
    z_labels = chunkflow.array(labels, chunks=(512, 512))
    z_values = chunkflow.array(values, chunks=(512, 512))
    with open("/proc/loadavg") as f:
        print(f"{args.side}^2, {len(index)} labels, load {f.read().split()[:3]}")
    run = {"scheduler": "threads"}
    assert ndimage.find_objects(z_labels, **run) == ndi.find_objects(labels)
    _show("find_objects", _time(lambda: ndi.find_objects(labels), args.repeat),
          _time(lambda: ndimage.find_objects(z_labels, **run), args.repeat))
    expected = ndi.median(values, labels, index)
    got = ndimage.median(z_values, z_labels, index, **run)
    assert np.array_equal(np.asarray(got).view("u8"), np.asarray(expected).view("u8"))
    _show("median", _time(lambda: ndi.median(values, labels, index), args.repeat),
          _time(lambda: ndimage.median(z_values, z_labels, index, **run), args.repeat))


if __name__ == "__main__":
    main()
