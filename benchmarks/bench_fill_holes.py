"""binary_fill_holes: chunkflow against scipy.ndimage in memory (issue 36's "Speed").

Run by hand (not part of the test suite)::

    python benchmarks/bench_fill_holes.py [--repeat 3] [--quick]

The images are random blobs (Gaussian-filtered noise, sigma 4 in 2-D and 2 in 3-D,
above its 45th percentile: a foreground with many holes, and a background reaching
the border), 4096^2 and 256^3 (``--quick``: 1024^2 and 96^3), stored once as a bool
Zarr v3 array (chunks 512^2 / 64^3). Each run is a fresh process:

- ``scipy``: ``scipy.ndimage.binary_fill_holes(image)``, the image loaded into memory
  before the clock (one core);
- ``chunkflow``: ``chunkflow.ndimage.binary_fill_holes(path, out=path)``: from the store
  to a new array in the store, every default (threads, blocks, codec; the background's
  labels in memory);
- ``chunkflow-numpy``: the same from the numpy array in memory, the result as a
  chunkflow array in memory (``out`` not given).

Figures: time and peak resident memory above the interpreter with its libraries
imported (VmHWM minus VmRSS before loading anything), medians over ``--repeat`` runs
with their ranges (runs interleaved), and chunkflow's ratios to scipy. Every result is
compared with scipy's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SIGMA = {2: 4.0, 3: 2.0}
KINDS = ("scipy", "chunkflow", "chunkflow-numpy")

CHILD = r"""
import json, shutil, sys, time
import numpy as np
import scipy.ndimage as ndi
import chunkflow
import chunkflow.ndimage

def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024

kind, folder = sys.argv[1], sys.argv[2]
# chunkflow's first-use modules loaded before the clock, as the peers' by their imports
tiny = np.ones((8,) * np.load(folder + "/expected.npy", mmap_mode="r").ndim, bool)
tiny[(slice(2, 6),) * tiny.ndim] = False
tiny[(slice(3, 5),) * tiny.ndim] = True
chunkflow.ndimage.binary_fill_holes(chunkflow.array(~tiny, chunks=(4,) * tiny.ndim))
base = status("VmRSS:")
out = folder + "/filled.zarr"
shutil.rmtree(out, ignore_errors=True)
if kind != "chunkflow":
    image = np.load(folder + "/image.npy")
start = time.perf_counter()
if kind == "scipy":
    result = ndi.binary_fill_holes(image)
elif kind == "chunkflow":
    result = chunkflow.ndimage.binary_fill_holes(folder + "/image.zarr", out=out)
else:
    result = chunkflow.ndimage.binary_fill_holes(image)
seconds = time.perf_counter() - start
peak = status("VmHWM:") - base
expected = np.load(folder + "/expected.npy")
same = bool((np.asarray(result[...]) == expected).all())
print(json.dumps({"seconds": seconds, "peak": peak, "same": same}))
"""


def make_image(folder: Path, shape: tuple[int, ...]) -> None:
    """The blobs as image.npy and image.zarr, and scipy's answer as expected.npy."""
    import scipy.ndimage as ndi

    import chunkflow

    rng = np.random.default_rng(0)
    field = ndi.gaussian_filter(rng.random(shape, dtype=np.float32), SIGMA[len(shape)])
    image = field > np.percentile(field, 45)
    np.save(folder / "image.npy", image)
    chunks = (512, 512) if len(shape) == 2 else (64, 64, 64)
    chunkflow.array(image, chunks=chunks, store=str(folder / "image.zarr"))
    expected = ndi.binary_fill_holes(image)
    np.save(folder / "expected.npy", expected)
    print(f"{'x'.join(map(str, shape))}: {int((expected & ~image).sum())} hole voxels filled",
          flush=True)


def run(kind: str, folder: Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", CHILD, kind, str(folder)], capture_output=True,
                          text=True, cwd=ROOT, check=True,
                          env={"PYTHONPATH": str(ROOT), **_environment()})
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _environment() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):8.2f} [{min(values):.2f}-{max(values):.2f}]"


def bench(shape: tuple[int, ...], repeat: int) -> None:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        make_image(folder, shape)
        runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
        for _ in range(repeat):  # interleaved: the machine's load changes along the run
            for kind in KINDS:
                runs[kind].append(run(kind, folder))
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
    parser.add_argument("--quick", action="store_true", help="1024^2 and 96^3")
    args = parser.parse_args()
    shapes = [(1024, 1024), (96, 96, 96)] if args.quick else [(4096, 4096), (256, 256, 256)]
    for shape in shapes:
        bench(shape, args.repeat)


if __name__ == "__main__":
    main()
