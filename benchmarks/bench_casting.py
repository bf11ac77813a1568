"""What the value check of a cast costs: ``map_chunks`` with the default
``casting="same_value"`` against ``casting="unsafe"`` (no check), side by side.

Run by hand (not part of the test suite), with nothing else running::

    python benchmarks/bench_casting.py [--repeat 5] [--size 4096]

A Gaussian filter (sigma 2, halo 8) of a SIZE^2 uint16 image in 512^2 chunks, folder to
folder with default arguments, into four output dtypes; each exercises one path of
:func:`chunkflow.graph.casting.cast_block`:

- ``u2 -> f4``: scipy's uint16 result into float32 (a safe cast: no value is looked at);
- ``f8 -> f4``: the filter in float64 into float32 (finite values becoming inf);
- ``f8 -> u2``: the float64 filter rounded (``np.rint``) into uint16 (NaN, inf, range,
  fraction: numpy's ``astype(casting="same_value")`` where numpy has it);
- ``u2 -> u1``: scipy's uint16 result (values up to 255) into uint8 (integer range).

The two runs of a case alternate, each figure is the median of ``--repeat`` runs with
the range in brackets, and the ratio is taken between the medians of the same run.
The per-block part times the cast alone on one 512^2 block (check vs plain
``astype``), the figure the job's difference should approach on a quiet machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from scipy import ndimage

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import chunkflow  # noqa: E402
from chunkflow.graph.casting import NUMPY_SAME_VALUE, cast_block  # noqa: E402

SIGMA = 2.0
DEPTH = 8  # scipy's radius for sigma 2: int(4 * 2 + 0.5)
CHUNK = 512


def scipy_result(window: np.ndarray) -> np.ndarray:
    return ndimage.gaussian_filter(window, SIGMA)


def float_result(window: np.ndarray) -> np.ndarray:
    return ndimage.gaussian_filter(window, SIGMA, output=np.float64)


def rounded_result(window: np.ndarray) -> np.ndarray:
    return np.rint(ndimage.gaussian_filter(window, SIGMA, output=np.float64))


CASES: list[tuple[str, Callable[[np.ndarray], np.ndarray], str]] = [
    ("u2 -> f4", scipy_result, "f4"),
    ("f8 -> f4", float_result, "f4"),
    ("f8 -> u2", rounded_result, "u2"),
    ("u2 -> u1", scipy_result, "u1"),
]


def _summary(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} s [{min(values):.3f}-{max(values):.3f}]"


def _job(source: str, out: str, func: Callable[..., Any], dtype: str, casting: str) -> float:
    start = time.perf_counter()
    chunkflow.map_chunks(func, source, out=out, depth=DEPTH, dtype=dtype, casting=casting,
                         overwrite=True)
    return time.perf_counter() - start


def _per_block(func: Callable[[np.ndarray], np.ndarray], dtype: str, repeat: int) -> tuple[float, float]:
    """Seconds of the cast of one block: checked, and plain astype."""
    block = func(np.random.default_rng(0).integers(0, 256, (CHUNK, CHUNK)).astype("u2"))
    out = np.dtype(dtype)
    timings: dict[str, list[float]] = {"checked": [], "plain": []}
    for _ in range(repeat * 20):
        start = time.perf_counter()
        cast_block(block, out, "same_value", "bench")
        timings["checked"].append(time.perf_counter() - start)
        start = time.perf_counter()
        block.astype(out)
        timings["plain"].append(time.perf_counter() - start)
    return statistics.median(timings["checked"]), statistics.median(timings["plain"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--size", type=int, default=4096)
    args = parser.parse_args()
    print(f"numpy {np.__version__} (astype casting='same_value': {NUMPY_SAME_VALUE}), "
          f"{args.size}^2 uint16 in {CHUNK}^2 chunks, Gaussian sigma {SIGMA}, "
          f"{args.repeat} repeats")
    with tempfile.TemporaryDirectory() as folder:
        source = str(Path(folder) / "src.zarr")
        data = np.random.default_rng(0).integers(0, 256, (args.size, args.size)).astype("u2")
        chunkflow.array(data, chunks=(CHUNK, CHUNK), store=source)
        blocks = (args.size // CHUNK) ** 2
        print(f"{'case':10} {'same_value (check)':>26} {'unsafe (no check)':>26} "
              f"{'job':>7} {'per block: check / astype':>27} {'x blocks / job':>15}")
        for name, func, dtype in CASES:
            out = str(Path(folder) / "out.zarr")
            _job(source, out, func, dtype, "unsafe")  # warm up: imports, page cache
            times: dict[str, list[float]] = {"same_value": [], "unsafe": []}
            for _ in range(args.repeat):  # alternate, so drift hits both alike
                for casting in ("same_value", "unsafe"):
                    times[casting].append(_job(source, out, func, dtype, casting))
            checked, plain = (statistics.median(times[c]) for c in ("same_value", "unsafe"))
            per_check, per_astype = _per_block(func, dtype, args.repeat)
            share = (per_check - per_astype) * blocks / plain
            print(f"{name:10} {_summary(times['same_value']):>26} {_summary(times['unsafe']):>26} "
                  f"{checked / plain - 1:>+7.1%} {per_check * 1e3:>10.2f} / {per_astype * 1e3:.2f} ms"
                  f" {share:>+14.2%}")


if __name__ == "__main__":
    main()
