"""distance_transform_edt: chunkflow against scipy.ndimage in memory.

Run by hand (not part of the test suite), with nothing else running::

    python benchmarks/bench_distance.py [--repeat 3] [--quick]

The images are random blobs (Gaussian-filtered noise, sigma 8 in 2-D and 3 in 3-D,
above its median: about half foreground), 4096^2 and 256^3 (``--quick``: 1024^2 and
128^3). Each run is a fresh process that loads the image first (not timed) and then:

- ``scipy``: ``scipy.ndimage.distance_transform_edt(image)`` in memory, one core;
- ``chunkflow``: ``distance_transform_edt(image)`` from the same numpy array, results
  returned as numpy (``out=None``, features between passes in memory, threads);
- ``chunkflow-store``: from a Zarr folder (chunks 512^2 / 64^3) to a Zarr folder
  (``out=``, ``temp=`` a folder), threads, ``max_memory="256 MiB"``: the bounded path.

Figures: time and peak resident memory above the interpreter with its libraries
imported (VmHWM minus VmRSS before loading the image), medians over ``--repeat`` runs
with their range, and chunkflow's ratios to scipy. Every run's distances are checked
against scipy's, bit for bit.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SIGMA = {2: 8.0, 3: 3.0}
KINDS = ("scipy", "chunkflow", "chunkflow-store")

CHILD = r"""
import json, sys, time
import numpy as np
import scipy.ndimage as ndi
import chunkflow
from chunkflow.graph.distance import distance_transform_edt

def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024

kind, folder = sys.argv[1], sys.argv[2]
base = status("VmRSS:")
if kind == "chunkflow-store":
    image = chunkflow.open(folder + "/image.zarr", mode="r")
else:
    image = np.load(folder + "/image.npy")
start = time.perf_counter()
if kind == "scipy":
    result = ndi.distance_transform_edt(image)
elif kind == "chunkflow":
    result = distance_transform_edt(image, scheduler="threads")
else:
    result = distance_transform_edt(image, out=folder + "/edt.zarr", temp=folder + "/temp.zarr",
                                    overwrite=True, scheduler="threads", max_memory="256 MiB")
seconds = time.perf_counter() - start
peak = status("VmHWM:") - base
if kind == "chunkflow-store":
    result = result[...]
expected = np.load(folder + "/expected.npy", mmap_mode="r")
same = bool((np.asarray(result).view("u8") == expected.view("u8")).all())
print(json.dumps({"seconds": seconds, "peak": peak, "same": same}))
"""


def make_image(folder: Path, shape: tuple[int, ...]) -> None:
    import scipy.ndimage as ndi

    import chunkflow

    rng = np.random.default_rng(0)
    field = ndi.gaussian_filter(rng.random(shape, dtype=np.float32), SIGMA[len(shape)])
    image = field > np.median(field)
    np.save(folder / "image.npy", image)
    chunks = (512, 512) if len(shape) == 2 else (64, 64, 64)
    chunkflow.array(image, chunks=chunks, store=str(folder / "image.zarr"))
    np.save(folder / "expected.npy", ndi.distance_transform_edt(image))


def run(kind: str, folder: Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", CHILD, kind, str(folder)], capture_output=True,
                          text=True, cwd=ROOT, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):8.2f} [{min(values):.2f}-{max(values):.2f}]"


def bench(shape: tuple[int, ...], repeat: int) -> None:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        make_image(folder, shape)
        runs = {kind: [run(kind, folder) for _ in range(repeat)] for kind in KINDS}
        shutil.rmtree(folder / "edt.zarr", ignore_errors=True)
    print(f"{'x'.join(map(str, shape))}:")
    for kind, found in runs.items():
        seconds = [r["seconds"] for r in found]
        peak = [r["peak"] / 2**20 for r in found]
        same = all(r["same"] for r in found)
        print(f"  {kind:16s} time {_median(seconds)} s   peak {_median(peak)} MiB   "
              f"equal to scipy: {same}")
    ours = {kind: statistics.median(r["seconds"] for r in runs[kind]) for kind in KINDS}
    peaks = {kind: statistics.median(r["peak"] for r in runs[kind]) for kind in KINDS}
    for kind in KINDS[1:]:
        print(f"  {kind} / scipy: time {ours[kind] / ours['scipy']:.2f}x, "
              f"peak memory {peaks[kind] / max(peaks['scipy'], 1):.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    shapes = [(1024, 1024), (128, 128, 128)] if args.quick else [(4096, 4096), (256, 256, 256)]
    for shape in shapes:
        bench(shape, args.repeat)


if __name__ == "__main__":
    main()
