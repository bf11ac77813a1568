"""Options shared by the commands, and the parsers of their values.

Examples
--------
>>> parse_shape("64,64"), parse_shape("8x16x16")
((64, 64), (8, 16, 16))
>>> parse_storage_option("anon=true"), parse_storage_option("profile=lab")
(('anon', True), ('profile', 'lab'))
>>> parse_scheduler("tcp://10.0.0.5:8786")
'tcp://10.0.0.5:8786'
>>> parse_size("512 MiB"), parse_size("1e6")
('512 MiB', '1e6')
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

from chunkflow.errors import CastingError, UsageError

__all__ = [
    "add_casting_option",
    "add_common_options",
    "add_compute_options",
    "add_max_memory_option",
    "add_scheduler_option",
    "add_storage_options",
    "naming_casting",
    "parse_scheduler",
    "parse_shape",
    "parse_size",
    "parse_storage_option",
    "progress_wanted",
    "refuse_uncastable",
    "stderr_is_tty",
    "storage_options",
]

_LOCAL_SCHEDULERS = ("threads", "processes", "sync")


def parse_shape(text: str) -> tuple[int, ...]:
    """``"64,64"`` or ``"64x64"`` as a tuple of positive integers."""
    parts = text.replace("x", ",").split(",")
    try:
        shape = tuple(int(part) for part in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a shape; expected integers separated by commas, e.g. 256,256"
        ) from None
    if any(n < 1 for n in shape):
        raise argparse.ArgumentTypeError(f"{text!r}: every size must be at least 1")
    return shape


def parse_storage_option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE``; the value is read as JSON when it parses (true, 3, {...}), else kept
    as text."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not KEY=VALUE (e.g. --storage-option anon=true)"
        )
    try:
        parsed: Any = json.loads(value)
    except ValueError:
        parsed = value
    return key.strip(), parsed


def parse_size(text: str) -> str:
    """A byte size such as ``512 MiB`` or ``1000000``, checked when the options are
    parsed (so a bad one is a usage error before any work) and passed on as typed."""
    from chunkflow.config import byte_count

    try:
        byte_count("--max-memory", text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a size; expected a number of bytes with an optional unit, "
            "e.g. 512MiB, '2 GiB' or 1000000") from None
    return text


def add_max_memory_option(parser: argparse.ArgumentParser, *, required: bool = False,
                          help: str = "what one task may use, e.g. '512 MiB'") -> None:
    """``--max-memory SIZE``, checked as a size while parsing."""
    parser.add_argument("--max-memory", type=parse_size, default=None, required=required,
                        metavar="SIZE", help=help)


def parse_scheduler(text: str) -> str:
    """``threads``, ``processes``, ``sync`` or the address of a running dask scheduler."""
    if text in _LOCAL_SCHEDULERS or "://" in text or text.rpartition(":")[2].isdigit():
        return text
    raise argparse.ArgumentTypeError(
        f"{text!r} is not threads, processes, sync or a scheduler address "
        "such as tcp://host:8786"
    )


class _RenamedOption(argparse.Action):
    """An option's old spelling: stores into the new option, with a FutureWarning
    (as :func:`chunkflow.config.renames.renamed_parameters` does for keywords)."""

    def __init__(self, *args: Any, new: str, **kwargs: Any) -> None:
        self.new = new
        super().__init__(*args, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        import warnings

        warnings.warn(f"{option_string} is renamed {self.new}; {option_string} stops working "
                      "in a later release", FutureWarning, stacklevel=2)
        setattr(namespace, self.dest, values)


def add_renamed_option(parser: argparse.ArgumentParser, old: str, new: str, dest: str,
                       **kwargs: Any) -> None:
    """Accept ``old`` (hidden from ``--help``) for the option ``new`` stored in ``dest``."""
    parser.add_argument(old, action=_RenamedOption, new=new, dest=dest,
                        default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kwargs)


def add_common_options(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    """``--debug`` and ``--quiet``, accepted before or after the command name."""
    # Subcommands must not reset what the top level parsed: SUPPRESS leaves it alone.
    default: Any = False if top else argparse.SUPPRESS
    parser.add_argument("--debug", action="store_true", default=default,
                        help="show the full traceback when something fails")
    parser.add_argument("-q", "--quiet", action="store_true", default=default,
                        help="no progress bar")


def add_casting_option(parser: argparse.ArgumentParser) -> None:
    """``--casting same_value|unsafe|same_kind|...``: how the result becomes the output's
    dtype (:mod:`chunkflow.graph.casting`)."""
    from chunkflow.graph.casting import CASTINGS, DEFAULT_CASTING

    parser.add_argument(
        "--casting", choices=CASTINGS, default=DEFAULT_CASTING,
        help=f"how the result is cast to the output's dtype (default: {DEFAULT_CASTING}: a "
             "value the dtype cannot hold fails the command and nothing is kept; unsafe: "
             "cast anyway, as numpy's astype wraps and truncates; same_kind, safe, equiv, "
             "no: numpy's rules for the pair of dtypes, values unchecked)",
    )


def refuse_uncastable(result: np.dtype, out: np.dtype, casting: str, where: str,
                      result_name: str = "the result's dtype") -> None:
    """Refuse, before anything is created, a ``--dtype`` the dtypes alone rule out
    under ``--casting`` (a usage error in the command's words); ``result_name`` says
    what is cast ("SRC's dtype" for a copy)."""
    from chunkflow.graph.casting import check_cast

    try:
        check_cast(result, out, casting, where)
    except CastingError as err:
        raise UsageError(str(err).replace("the result's dtype", result_name)
                         .replace("casting='unsafe'", "--casting unsafe")
                         .replace("dtype= of the result's kind", "a --dtype of its kind")
                         ) from None


@contextlib.contextmanager
def naming_casting(out: np.dtype, values: str) -> Iterator[None]:
    """A value that does not fit the output is ``--dtype``'s: say so (``values``: what
    was cast, "the filtered values"), and which option casts anyway."""
    from chunkflow.graph.casting import UNSAFE_HINT

    try:
        yield
    except CastingError as err:
        line = str(err).splitlines()[0].replace(UNSAFE_HINT, "Pass --casting unsafe to cast "
                                                "anyway, or a --dtype that holds the values")
        raise CastingError(f"{values} do not fit --dtype {out}: {line}") from err


def add_compute_options(parser: argparse.ArgumentParser) -> None:
    """``--scheduler`` and ``--storage-option``, for commands that compute."""
    add_storage_options(parser)
    add_scheduler_option(parser)


def add_scheduler_option(parser: argparse.ArgumentParser) -> None:
    """``--scheduler threads|processes|sync|ADDRESS``."""
    parser.add_argument(
        "--scheduler", type=parse_scheduler, default="threads",
        metavar="threads|processes|ADDRESS",
        help="where to run: local threads (default), local processes, or the address of "
             "a running dask scheduler (tcp://host:8786)",
    )


def add_storage_options(parser: argparse.ArgumentParser) -> None:
    """``--storage-option KEY=VALUE`` (repeatable), for commands that open URLs."""
    parser.add_argument(
        "--storage-option", type=parse_storage_option, action="append", default=[],
        metavar="KEY=VALUE", dest="storage_options",
        help="an fsspec option for URLs (repeatable; values are JSON when they "
             "parse, e.g. anon=true)",
    )


def storage_options(args: argparse.Namespace, location: str) -> dict[str, Any] | None:
    """The ``--storage-option`` pairs as a dict for a URL ``location``; ``None`` for a
    local path or when none were given (``copy`` may read a URL and write a folder)."""
    pairs = getattr(args, "storage_options", None) or []
    if "://" not in str(location):
        return None
    return dict(pairs) or None


def stderr_is_tty() -> bool:
    """Whether a progress bar on standard error would reach a person."""
    return sys.stderr.isatty()


def progress_wanted(args: argparse.Namespace) -> bool:
    """A bar unless ``--quiet`` or standard error is not a terminal."""
    return not getattr(args, "quiet", False) and stderr_is_tty()
