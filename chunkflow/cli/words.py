"""Library messages in the command line's words, and what to type next.

chunkflow's errors are written for Python callers (``overwrite=True``, ``temp=``,
``max_memory``). On the command line the same advice must name the options the user
types (``--overwrite``, ``--temp``, ``--max-memory``), once, after one prefix.

Examples
--------
>>> in_cli_words("rechunk: max_memory must be a size, got 'lots'", "rechunk")
"--max-memory must be a size, got 'lots'"
>>> in_cli_words("exists; pass overwrite=True, or resume=True (--resume)", "filter")
'exists; pass --overwrite, or --resume'
>>> in_cli_words("through an intermediate array: pass temp='scratch.zarr'", "rechunk")
"through an intermediate array: pass --temp 'scratch.zarr'"
>>> in_cli_words("label: out 'a.zarr' is SRC 'a.zarr' of this job", "label")
"DST 'a.zarr' is SRC 'a.zarr' of this job"
>>> in_cli_words("a cycle, steps of 16.0: pass tolerance=16.0", "threshold")
'a cycle, steps of 16.0: pass --tolerance 16.0'
>>> in_cli_words("histogram: [nan, nan] is not finite; pass range=", "reduce")
'histogram: [nan, nan] is not finite; pass --range LOW,HIGH'
>>> command_line(["filter", "in.zarr", "out dir.zarr", "--median", "3"], add="--resume")
"chunkflow filter in.zarr 'out dir.zarr' --median 3 --resume"
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

__all__ = ["command_line", "in_cli_words"]

# Python keyword spellings -> the option a user types. Order matters: the longer
# spellings first, so that "temp=" inside "pass temp=" is rewritten once.
_SPELLINGS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), option) for pattern, option in (
        (r"\boverwrite=True\b", "--overwrite"),
        (r"\bresume=True\b", "--resume"),
        (r"\btemp=(?=['\"\w])", "--temp "),
        (r"\btemp=", "--temp"),
        (r"\bmax_memory=?", "--max-memory"),
        (r"\bstorage_options=?", "--storage-option"),
        (r"\bcasting=(?=['\"\w])", "--casting "),
        (r"\bdtype=(?=['\"\w])", "--dtype "),
        (r"\bchunks=(?=\W|$)", "--chunks"),
        (r"\bshards=(?=\W|$)", "--shards"),
        (r"\bintensity=(?=\W|$)", "--intensity"),
        (r"\btolerance=(?=[-'\"\w.])", "--tolerance "),
        (r"^out (?=')", "DST "),  # the writers' out= (an output that is the source)
        (r"\btolerance=", "--tolerance"),
        (r"\bpass range=$", "pass --range LOW,HIGH"),  # a histogram's range
    )
)
# "--resume (--resume)" after the rewrite: say it once.
_REPEATED = re.compile(r"(--[\w-]+) \(\1\)")


def in_cli_words(message: str, command: str) -> str:
    """``message`` without a repeated ``COMMAND:`` prefix and with options as typed."""
    for prefix in (f"chunkflow {command}: ", f"chunkflow.{command}: ", f"{command}: "):
        if message.startswith(prefix):
            message = message[len(prefix):]
            break
    for pattern, option in _SPELLINGS:
        message = pattern.sub(option, message)
    return _REPEATED.sub(r"\1", message)


def command_line(argv: Sequence[str], *, add: str | None = None) -> str:
    """The command as the user would type it again, with ``add`` appended if missing."""
    words = ["chunkflow", *argv]
    if add is not None and add not in words:
        words.append(add)
    return shlex.join(words)
