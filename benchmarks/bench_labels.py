"""Labels and object tables: chunkflow.label + measure against dask-image and against
scipy + scikit-image in memory.

Run by hand (not part of the test suite), with nothing else running::

    python benchmarks/bench_labels.py [--repeat 3] [--quick]

The images are smooth random fields (Gaussian-filtered noise, sigma 3 in 2-D, 1 in
3-D) stored as uint8
in 512^2 (2-D) or 128^3 (3-D; 32^3 with ``--quick``) chunks, Zarr v3, thresholded at their 70th percentile:
8192^2 gives about 10^5 objects, most of the large ones crossing chunks; 512^3 about
as many. ``--quick``: 2048^2 and 128^3. Each run is a fresh process that reads the
image from a folder and:

- ``chunkflow``: ``chunkflow.label(to_dask(image) > t, folder)`` then
  ``chunkflow.measure(labels, image, properties=["label", "area", "intensity_mean"])``
  (threads, default plan); ``chunkflow-1`` the same on one thread (``scheduler="sync"``);
- ``dask-image``: ``ndmeasure.label(x > t)`` stored to a folder with its count, then
  ``ndmeasure.area`` and ``ndmeasure.mean`` over every label of the stored labels;
  ``dask-image-label`` only the first step. Both run under an 8 GiB address-space cap
  and a time limit (5 minutes, or 30x chunkflow's time): ``area`` and ``mean`` go
  through ``labeled_comprehension``, a graph of labels x blocks (dask-image issue 238),
  and a run stopped is reported so, the speed-up as a lower bound;
- ``scipy``: the image already in memory (not timed: loaded before), one core:
  ``scipy.ndimage.label`` then ``skimage.measure.regionprops_table``.

Figures: time and peak resident memory above the interpreter (VmHWM minus the
resident size once the libraries are imported), medians of ``--repeat`` runs; then the
ratios the issue asks for (dask-image: >= 10x faster at <= 0.25x the memory; scipy: at
most 2x its time) and, for the memory being flat, chunkflow on an image 4 times larger
(goal: within 1.2x the peak). The runs must agree: every tool finds the same number of
objects and the same sorted areas.

Then (``--no-peers`` skips it, ``--peers`` runs only it) label against cc3d and scipy,
and each regionprops property against scikit-image and cc3d.statistics: see
benchmarks/bench_labels_peers.py.

On paper (10^12 voxels, 10^9 objects, 100 workers): see benchmarks/README_labels.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from bench_graph import _median, _peak_rss, run_child  # noqa: E402

SIGMA = {2: 3.0, 3: 1.0}  # per dimension: about 10^5 objects at full size either way
TILE = 64  # noise rows (2-D) or slices (3-D) drawn from one seed
KINDS = ("chunkflow", "chunkflow-1", "scipy", "dask-image-label", "dask-image")
# dask-image's area and mean build a graph of labels x blocks (its issue 238): a run
# that passes this much address space or these seconds is stopped and reported so.
PEER_MEMORY_CAP = 8 * 2**30
PEER_SECONDS = (300, 30)  # at least this, or this many times chunkflow's time


def _resident() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _scale(ndim: int) -> float:
    """Spreads the field (std of smoothed uniform noise) to about 25 grey levels."""
    spread = (1 / math.sqrt(12)) / ((4 * math.pi) ** (ndim / 4) * SIGMA[ndim] ** (ndim / 2))
    return 25 / spread


def _noise(start: int, stop: int, rest: tuple[int, ...]) -> np.ndarray:
    """Uniform noise of rows ``start:stop`` (clipped to the array), the same whichever
    slab asks: each tile of TILE rows has its own seed."""
    tiles = [np.random.default_rng(k).random((TILE, *rest), dtype="f4")
             for k in range(start // TILE, -(-stop // TILE))]
    rows = np.concatenate(tiles)
    first = (start // TILE) * TILE
    return rows[start - first:stop - first]


def make_image(path: Path, shape: tuple[int, ...], chunks: tuple[int, ...]) -> float:
    """Write the smooth uint8 field at ``path`` (if not there); its threshold."""
    from scipy import ndimage

    import chunkflow

    threshold = 128 + 0.52 * 25  # the 70th percentile of a normal field
    if path.exists():
        return threshold
    z = chunkflow.create(shape, chunks=chunks, dtype="u1", store=str(path), zarr_format=3)
    sigma = SIGMA[len(shape)]
    halo, slab = int(4 * sigma) + 1, chunks[0]
    for start in range(0, shape[0], slab):
        stop = min(shape[0], start + slab)
        lo, hi = max(0, start - halo), min(shape[0], stop + halo)
        field = ndimage.gaussian_filter(_noise(lo, hi, shape[1:]), sigma)[start - lo:stop - lo]
        z[start:stop] = np.clip((field - 0.5) * _scale(len(shape)) + 128, 0, 255).astype("u1")
    return threshold


def _chunkflow(image: str, out: str, threshold: float, scheduler: str) -> dict[str, Any]:
    import chunkflow

    z = chunkflow.open_array(image, mode="r")
    labels, count = chunkflow.label(chunkflow.to_dask(z) > threshold, out,
                                    scheduler=scheduler)
    table = chunkflow.measure(labels, z, properties=["label", "area", "intensity_mean"],
                              scheduler=scheduler)
    return {"count": count, "areas": table["area"]}


def _dask_image(image: str, out: str, threshold: float, measure: bool = True) -> dict[str, Any]:
    import dask
    import dask.array as da
    import zarr
    from dask_image import ndmeasure

    x = da.from_zarr(zarr.open_array(image, mode="r"))
    labels, count = ndmeasure.label(x > threshold)
    stored = labels.to_zarr(out, compute=False)
    _, count = dask.compute(stored, count)
    written = da.from_zarr(zarr.open_array(out, mode="r"))
    if not measure:  # the labels alone; their areas (for the check) neither timed nor counted
        stop, peak = time.perf_counter(), _peak_rss()
        return {"count": int(count), "areas": np.bincount(np.asarray(written).ravel())[1:],
                "stop": stop, "peak": peak}
    index = np.arange(1, int(count) + 1)
    areas, _ = dask.compute(ndmeasure.area(x, written, index), ndmeasure.mean(x, written, index))
    return {"count": int(count), "areas": np.asarray(areas)}


def _scipy(image: str, out: str, threshold: float) -> tuple[dict[str, Any], float]:
    import zarr
    from scipy import ndimage
    from skimage.measure import regionprops_table

    data = zarr.open_array(image, mode="r")[...]  # in memory before the clock starts
    start = time.perf_counter()
    labels, count = ndimage.label(data > threshold)
    table = regionprops_table(labels, data, properties=["label", "area", "intensity_mean"])
    return {"count": count, "areas": table["area"]}, start


def _child(kind: str, image: str, out: str, threshold: str) -> None:
    import dask  # noqa: F401 - every library imported before the baseline
    import dask_image.ndmeasure  # noqa: F401
    import scipy.ndimage  # noqa: F401
    import skimage.measure  # noqa: F401
    import zarr  # noqa: F401

    import chunkflow  # noqa: F401

    # chunkflow loads its graph functions on first use: load them before the
    # baseline and the timer, as the peers' code is loaded.
    import chunkflow.graph  # noqa: F401

    if kind.startswith("dask-image"):
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (PEER_MEMORY_CAP, PEER_MEMORY_CAP))
    shutil.rmtree(out, ignore_errors=True)
    baseline = _resident()
    start = time.perf_counter()
    if kind == "scipy":
        result, start = _scipy(image, out, float(threshold))
    elif kind.startswith("dask-image"):
        result = _dask_image(image, out, float(threshold), measure=kind == "dask-image")
    else:
        result = _chunkflow(image, out, float(threshold),
                            "sync" if kind == "chunkflow-1" else "threads")
    seconds = result.get("stop", time.perf_counter()) - start
    areas = np.sort(np.asarray(result["areas"], dtype=np.int64))
    print(json.dumps({"seconds": seconds, "rss": result.get("peak", _peak_rss()) - baseline,
                      "count": int(result["count"]), "areas": int(areas.sum()),
                      "largest": int(areas[-1]) if len(areas) else 0,
                      "digest": int(np.bitwise_xor.reduce(areas * np.arange(1, len(areas) + 1)))
                      if len(areas) else 0}))


def _capped(kind: str, image: Path, out: Path, threshold: float,
            seconds: float) -> dict[str, Any]:
    """A peer's run, stopped past ``seconds`` or :data:`PEER_MEMORY_CAP`."""
    command = [sys.executable, __file__, "--child", kind, str(image), str(out), str(threshold)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=seconds,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    except subprocess.TimeoutExpired:
        return {"failed": f"stopped after {seconds:.0f} s", "seconds": seconds}
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return {"failed": f"failed ({last[:80]}) under a {PEER_MEMORY_CAP // 2**30} GiB cap",
                "seconds": float("nan")}
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _runs(kind: str, image: Path, folder: Path, threshold: float, repeat: int,
          ours: float) -> list[dict[str, Any]]:
    out = folder / f"{kind}.zarr"
    if kind.startswith("dask-image"):
        cap = max(PEER_SECONDS[0], PEER_SECONDS[1] * ours)
        first = _capped(kind, image, out, threshold, cap)
        return [first] if "failed" in first else [first] + [
            _capped(kind, image, out, threshold, cap) for _ in range(repeat - 1)]
    return [run_child(__file__, kind, str(image), str(out), str(threshold))
            for _ in range(repeat)]


def _line(kind: str, runs: list[dict[str, Any]]) -> str:
    if "failed" in runs[0]:
        return f"   {kind:16s} {runs[0]['failed']}"
    return (f"   {kind:16s} {_median([r['seconds'] for r in runs])} s   peak RSS above the "
            f"interpreter {_median([r['rss'] / 2**20 for r in runs])} MiB   "
            f"{int(runs[0]['count'])} objects")


def _ratio(ours: list[dict[str, Any]], theirs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in ours) / statistics.median(r[key] for r in theirs)


def bench(folder: Path, shape: tuple[int, ...], chunks: tuple[int, ...], repeat: int,
          kinds: tuple[str, ...] = KINDS) -> dict[str, list[dict[str, float]]]:
    name = "x".join(map(str, shape))
    image = folder / f"image-{name}.zarr"
    threshold = make_image(image, shape, chunks)
    print(f"label + measure(area, intensity_mean) of {name} uint8 in "
          f"{'x'.join(map(str, chunks))} chunks, folder to folder (time, peak RSS)", flush=True)
    results: dict[str, list[dict[str, Any]]] = {}
    for kind in kinds:
        ours = statistics.median(r["seconds"] for r in results.get("chunkflow", [{"seconds": 1}]))
        results[kind] = _runs(kind, image, folder, threshold, repeat, ours)
        print(_line(kind, results[kind]), flush=True)
    ours = results["chunkflow"]
    agree = {(r[0]["count"], r[0]["areas"], r[0]["digest"]) for r in results.values()
             if "failed" not in r[0]}
    print(f"   every tool that finished found the same objects and areas: {len(agree) == 1}")
    for peer in ("dask-image-label", "dask-image"):
        if peer not in results:
            continue
        theirs = results[peer]
        what = "label + area + mean" if peer == "dask-image" else "its label alone"
        if "failed" in theirs[0]:
            print(f"   vs dask-image ({what}): it {theirs[0]['failed']}; speed-up > "
                  f"{theirs[0]['seconds'] / statistics.median(r['seconds'] for r in ours):.0f}x")
            continue
        print(f"   vs dask-image ({what}): speed-up {1 / _ratio(ours, theirs, 'seconds'):.1f}x "
              f"(goal >= 10), memory {_ratio(ours, theirs, 'rss'):.2f}x (goal <= 0.25)")
    if "scipy" in results:
        print(f"   vs scipy + skimage in memory (one core): chunkflow "
              f"{_ratio(ours, results['scipy'], 'seconds'):.2f}x its time on threads, "
              f"{_ratio(results['chunkflow-1'], results['scipy'], 'seconds'):.2f}x on one "
              "thread (goal <= 2)")
    return results


def flat_memory(folder: Path, shape: tuple[int, ...], chunks: tuple[int, ...], repeat: int,
                small: list[dict[str, float]]) -> None:
    larger = (shape[0] * 2, shape[1] * 2, *shape[2:]) if len(shape) == 2 else \
        (shape[0] * 4, *shape[1:])
    big = bench(folder, larger, chunks, repeat, ("chunkflow",))["chunkflow"]
    print(f"   4x the voxels: peak RSS {_ratio(big, small, 'rss'):.2f}x (goal <= 1.2), "
          f"time {_ratio(big, small, 'seconds'):.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2048^2 and 128^3")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--keep", type=Path, help="reuse this folder for the data")
    parser.add_argument("--peers", action="store_true", help="only against cc3d and skimage")
    parser.add_argument("--no-peers", action="store_true", help="not against cc3d and skimage")
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    folder = args.keep or Path(tempfile.mkdtemp(prefix="chunkflow-bench-labels-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        if not args.peers:
            plane = (2048, 2048) if args.quick else (8192, 8192)
            small = bench(folder, plane, (512, 512), args.repeat)
            flat_memory(folder, plane, (512, 512), args.repeat, small["chunkflow"])
            side = 128 if args.quick else 512
            bench(folder, (side,) * 3, (side // 4,) * 3, args.repeat)
        if not args.no_peers:
            import bench_labels_peers

            bench_labels_peers.run(folder, args.quick, args.repeat)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
