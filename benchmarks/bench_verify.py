"""``verify`` on a 2 GiB array: wall time, throughput and peak memory against the floor.

Run by hand (not part of the test suite), with nothing else running::

    python benchmarks/bench_verify.py [--repeat 3] [--quick]

The array: 32768 x 32768 uint16 (2 GiB; 4096 x 4096, 32 MiB, with ``--quick``) in
512^2 chunks (4096 chunks of 512 KiB), chunkflow's default codecs (Zarr v3, blosc
lz4 with byte shuffle),
in a folder, holding a ramp with noise (compressible like an image; the ratio is printed).
The files stay in the page cache (the machine reads them once to write them), so
this measures the CPU side: listing, fetching and decoding.

Cases, each run in a fresh child process (its peak RSS is its own), ``--repeat``
times, interleaved:

- ``floor``: a plain loop over the chunk files: read each, decode it with numcodecs'
  Blosc into a uint16 array, check its size. What any verification must do;
- ``verify``: ``array.verify()``, the default path (in this process, chunkflow's I/O
  threads fetching and decoding a region of chunks at a time);
- ``verify threads``: ``array.verify(scheduler="threads")`` (one dask task per region
  of 256 MiB of chunks).

Printed per case: the median wall time with its range in brackets, the throughput
(decoded bytes per second), the peak RSS above the interpreter (the child's peak
minus its RSS after imports), and the ratio of the median to the floor's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CHUNK = 512

_CHILD = r"""
import json, os, sys, time
import numpy as np
sys.path.insert(0, {root!r})
case, path = sys.argv[1], sys.argv[2]
import chunkflow, numcodecs
if case == "verify threads":
    import chunkflow.graph  # loaded before the baseline, as a dask user has it
def status(field):  # bytes, from /proc/self/status
    with open("/proc/self/status") as f:
        line = next(l for l in f if l.startswith(field + ":"))
    return int(line.split()[1]) * 1024
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # resets the peak (VmHWM) to the present RSS: imports' peaks left out
base = status("VmRSS")
def peak():
    return status("VmHWM")
start = time.perf_counter()
if case == "floor":
    codec, checked = numcodecs.Blosc(), 0
    folder = os.path.join(path, "c")
    for row in sorted(os.listdir(folder), key=int):
        for col in sorted(os.listdir(os.path.join(folder, row)), key=int):
            with open(os.path.join(folder, row, col), "rb") as f:
                chunk = np.frombuffer(codec.decode(f.read()), dtype="<u2")
            assert chunk.size == {chunk} * {chunk}
            checked += 1
    ok = True
else:
    z = chunkflow.open(path, mode="r")
    report = z.verify(scheduler="threads" if case == "verify threads" else None)
    checked, ok = report.checked, report.ok
seconds = time.perf_counter() - start
print(json.dumps({{"seconds": seconds, "peak": peak() - base, "checked": checked, "ok": ok}}))
"""


def make_array(path: Path, side: int) -> int:
    """Write the array (a slab of 512 rows at a time); returns its decoded bytes."""
    sys.path.insert(0, str(ROOT))
    import chunkflow

    z = chunkflow.create((side, side), chunks=(CHUNK, CHUNK), dtype="u2", store=str(path))
    rng = np.random.default_rng(0)
    ramp = (np.arange(side, dtype=np.uint32) * 7) % 40000
    for top in range(0, side, CHUNK):
        rows = (ramp[top:top + CHUNK, None] + ramp[None, :]) % 60000
        noise = rng.integers(0, 64, (min(CHUNK, side - top), side), dtype=np.uint32)
        z[top:top + CHUNK] = (rows + noise).astype("u2")
    return z.nbytes


def run_case(case: str, path: Path, side: int) -> dict[str, float]:
    code = _CHILD.format(root=str(ROOT), chunk=CHUNK)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code, case, str(path)], capture_output=True,
                          text=True, env=env, check=False)
    if done.returncode:
        raise SystemExit(f"{case} failed:\n{done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    expected = (side // CHUNK) ** 2
    if result["checked"] != expected or not result["ok"]:
        raise SystemExit(f"{case}: checked {result['checked']} of {expected}, ok={result['ok']}")
    return result


def _median(values: list[float]) -> float:
    return float(np.median(values))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a 32 MiB array")
    args = parser.parse_args()
    side = 4096 if args.quick else 32768
    folder = Path(tempfile.mkdtemp(prefix="bench-verify-"))
    try:
        path = folder / "a.zarr"
        start = time.perf_counter()
        nbytes = make_array(path, side)
        stored = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
        print(f"array {side}x{side} uint16, {CHUNK}^2 chunks: {nbytes / 2**30:.2f} GiB, "
              f"{stored / 2**30:.2f} GiB stored, written in {time.perf_counter() - start:.1f} s")
        cases = ["floor", "verify", "verify threads"]
        runs: dict[str, list[dict[str, float]]] = {case: [] for case in cases}
        for _ in range(args.repeat):
            for case in cases:  # interleaved: a slower moment of the machine hits all
                runs[case].append(run_case(case, path, side))
        floor = _median([r["seconds"] for r in runs["floor"]])
        for case in cases:
            seconds = [r["seconds"] for r in runs[case]]
            peaks = [r["peak"] / 2**20 for r in runs[case]]
            median = _median(seconds)
            print(f"{case:15s} {median:6.2f} s [{min(seconds):.2f}-{max(seconds):.2f}]  "
                  f"{nbytes / median / 2**20:7.0f} MiB/s  peak RSS +{_median(peaks):.0f} MiB "
                  f"[{min(peaks):.0f}-{max(peaks):.0f}]  x{median / floor:.2f} of the floor")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
