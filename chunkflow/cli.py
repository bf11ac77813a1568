"""The ``chunkflow`` command line.

``chunkflow demo [FOLDER]`` creates an array in a local folder, writes it, reads it back
and prints its ``.info``; ``chunkflow info PATH`` prints the ``.info`` of a stored array.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

import numpy as np

import chunkflow

__all__ = ["main", "run_demo"]


def run_demo(folder: Path) -> str:
    """Write and read back a 4096x4096 uint16 array under ``folder``; return a report.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     report = run_demo(Path(tmp))
    >>> "read back identical: True" in report
    True
    """
    path = folder / "demo.zarr"
    shape, chunks = (4096, 4096), (512, 512)
    rows = np.arange(shape[0], dtype=np.uint32)[:, None]
    cols = np.arange(shape[1], dtype=np.uint32)[None, :]
    data = ((rows * 3 + cols * 5) % 4096).astype(np.uint16)

    z = chunkflow.open(str(path), mode="w", shape=shape, chunks=chunks, dtype="uint16")
    z.attrs["description"] = "chunkflow demo: a smooth uint16 gradient"
    start = time.perf_counter()
    z[:] = data
    wrote = time.perf_counter() - start

    again = chunkflow.open(str(path), mode="r")
    start = time.perf_counter()
    back = again[:]
    read = time.perf_counter() - start
    megabytes = data.nbytes / 1e6
    lines = [
        f"array at {path}",
        f"wrote {megabytes:.0f} MB in {wrote * 1000:.0f} ms ({megabytes / wrote:.0f} MB/s)",
        f"read {megabytes:.0f} MB in {read * 1000:.0f} ms ({megabytes / read:.0f} MB/s)",
        f"read back identical: {bool(np.array_equal(back, data))}",
        f"a window: {again[100, 200:205].tolist()}",
        "",
        repr(again.info),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``chunkflow`` command."""
    parser = argparse.ArgumentParser(prog="chunkflow", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="write, read back and describe a demo array")
    demo.add_argument("folder", nargs="?", help="where to write (default: a temporary folder)")
    info = commands.add_parser("info", help="print the .info of a stored array")
    info.add_argument("path", help="folder, .zip or URL of the array")
    args = parser.parse_args(argv)

    if args.command == "demo":
        if args.folder:
            print(run_demo(Path(args.folder)))
        else:
            with tempfile.TemporaryDirectory() as tmp:
                print(run_demo(Path(tmp)))
        return 0
    try:
        print(chunkflow.open(args.path, mode="r").info)
    except (FileNotFoundError, ValueError) as err:
        print(f"chunkflow: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
