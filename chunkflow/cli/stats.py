"""``chunkflow reduce``: statistics of an array larger than memory, printed.

Examples
--------
>>> import numpy as np
>>> print(text_histogram(np.array([1, 4, 2]), np.array([0.0, 1.0, 2.0, 3.0]), width=8))
[0, 1)  1  ##
[1, 2)  4  ########
[2, 3]  2  ####
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

import chunkflow
from chunkflow.cli.nodes import naming_source, open_array_at
from chunkflow.cli.options import (
    add_compute_options,
    add_max_memory_option,
    progress_wanted,
    storage_options,
)
from chunkflow.errors import MemoryPlanError, UsageError

__all__ = ["OPS", "parse_percentile", "parse_range", "register", "run_reduce", "text_histogram"]

OPS = ("mean", "std", "min", "max", "sum", "histogram")
DEFAULT_OPS = ("mean", "std", "min", "max")


def _edge(value: float) -> str:
    return f"{value:.6g}"


def text_histogram(counts: np.ndarray, edges: np.ndarray, width: int = 40) -> str:
    """Bins as lines ``[low, high)  count  ####``, bars scaled to the largest count."""
    peak = max(int(counts.max()), 1) if len(counts) else 1
    labels = [f"[{_edge(lo)}, {_edge(hi)}{']' if i == len(counts) - 1 else ')'}"
              for i, (lo, hi) in enumerate(zip(edges[:-1], edges[1:]))]
    label_width = max(map(len, labels), default=0)
    count_width = max((len(str(int(c))) for c in counts), default=1)
    lines = [
        f"{label:<{label_width}}  {int(count):>{count_width}}  "
        f"{'#' * _bar(int(count), peak, width)}"
        for label, count in zip(labels, counts)
    ]
    return "\n".join(lines)


def _bar(count: int, peak: int, width: int) -> int:
    # Any non-empty bin gets at least one mark, so rare values stay visible.
    return max(round(width * count / peak), 1 if count else 0)


def _format_value(value: Any) -> str:
    value = np.asarray(value)
    return f"{value.item():.8g}" if value.ndim == 0 else np.array2string(value)


def parse_percentile(text: str) -> float:
    """A percentile between 0 and 100 (``--percentile 99.5``)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentile from 0 to 100")
    return value


def run_reduce(args: argparse.Namespace) -> int:
    """Print the chosen statistics of the array at ``args.path``."""
    asked_order = args.median or args.percentile
    ops = list(dict.fromkeys(args.op or ([] if asked_order else DEFAULT_OPS)))
    source = open_array_at(args.path, storage_options(args, args.path), cache=False)
    with naming_source(args.path), _memory_refused():
        _print_reductions(args, source, ops, progress_wanted(args))
    return 0


def _print_reductions(args: argparse.Namespace, source: chunkflow.Array, ops: list[str],
                      progress: bool) -> None:
    plain = [op for op in ops if op != "histogram"]
    if plain:
        values = chunkflow.reduce(source, plain, max_memory=args.max_memory,
                                  scheduler=args.scheduler, progress=progress)
        width = max(map(len, plain))
        for op in plain:
            print(f"{op:<{width}}  {_format_value(values[op])}")
    order = ([("median", None)] if args.median else []) + [
        (f"percentile {q:g}", q) for q in dict.fromkeys(args.percentile or [])]
    if order:
        _print_order_statistics(args, source, order, progress)
    if "histogram" in ops:
        counts, edges = chunkflow.histogram(source, bins=args.bins, range=args.range,
                                            max_memory=args.max_memory,
                                            scheduler=args.scheduler, progress=progress)
        print(f"histogram of {args.path} ({int(counts.sum())} values, {args.bins} bins):")
        print(text_histogram(counts, edges))


def _print_order_statistics(args: argparse.Namespace, source: chunkflow.Array,
                            order: list[tuple[str, float | None]], progress: bool) -> None:
    """The median and percentiles, exact (:func:`chunkflow.percentile`: numpy's
    ``linear`` method on every value), in one pass for all of them."""
    qs = [50.0 if q is None else q for _, q in order]
    values = np.atleast_1d(chunkflow.percentile(
        source, qs, max_memory=args.max_memory, scheduler=args.scheduler, progress=progress))
    width = max(len(name) for name, _ in order)
    for (name, _), value in zip(order, values):
        print(f"{name:<{width}}  {_format_value(value)}")


@contextlib.contextmanager
def _memory_refused() -> Iterator[None]:
    """A --max-memory too small for one block is a usage error (exit code 2)."""
    try:
        yield
    except MemoryPlanError as err:
        raise UsageError(str(err)) from err  # in CLI words at run_guarded


def parse_range(text: str) -> tuple[float, float]:
    """``LOW,HIGH``: the histogram's range, as numpy's ``range=`` (values outside it
    are not counted, NaN neither).

    Examples
    --------
    >>> parse_range("0,4095.5")
    (0.0, 4095.5)
    >>> parse_range("5,1")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: '5,1' is not LOW,HIGH: two finite numbers, LOW below HIGH
    """
    parts = text.split(",")
    try:
        low, high = (float(part) for part in parts)
    except ValueError:
        low = high = float("nan")
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not LOW,HIGH: two finite numbers, LOW below HIGH")
    return low, high


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def register(commands: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``reduce`` to the command parser."""
    parser = commands.add_parser(
        "reduce", parents=parents,
        help="print mean, std, min, max, sum, median, percentiles or a histogram of an "
             "array, in bounded memory",
        description="Reduce the array at PATH block by block (it may be larger than "
                    "memory) and print the results; a histogram is drawn as text.",
    )
    parser.add_argument("path", metavar="PATH", help="the array (folder, .zip or URL)")
    parser.add_argument("--op", action="append", choices=OPS, metavar="|".join(OPS),
                        help="what to compute (repeatable; default: mean, std, min, max)")
    parser.add_argument("--median", action="store_true",
                        help="the exact median (as numpy.median)")
    parser.add_argument("--percentile", action="append", type=parse_percentile, metavar="Q",
                        help="the exact Q-th percentile, 0 to 100 (repeatable; as "
                             "numpy.percentile's linear method)")
    parser.add_argument("--bins", type=_positive_int, default=20,
                        help="histogram bins (default: 20)")
    parser.add_argument("--range", type=parse_range, default=None, metavar="LOW,HIGH",
                        help="the histogram's range (default: the values' minimum and "
                             "maximum; needed when the array holds NaN or inf). A "
                             "negative LOW is written --range=-1,7")
    add_max_memory_option(
        parser, help="what one task may use, e.g. '512 MiB' (default: a worker's memory "
                     "less the chunk cache, shared by its threads)")
    add_compute_options(parser)
    parser.set_defaults(run=run_reduce)
