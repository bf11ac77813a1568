"""How the command line reports failures: one line, an exit code, no traceback.

Exit codes: ``0`` success, ``1`` a runtime error (a missing path, an unreachable or
unauthorized URL, a failed computation), ``2`` a bad argument, ``130`` interrupted.
``--debug`` prints the traceback before the one-line message.

Examples
--------
>>> describe(ValueError("Protocol not known: foo"))
"unknown URL protocol 'foo' (fsspec knows none by that name; e.g. file://, s3://, gs://, https://, memory://)"
>>> describe(KeyError("a"))
"KeyError: 'a'"
>>> from chunkflow.errors import KeyNotFoundError
>>> describe(KeyNotFoundError("c/0/0"))
"KeyNotFoundError: 'c/0/0'"
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from typing import Any

# UsageError and MissingDependencyError live in chunkflow.errors (imported here too).
from chunkflow.errors import ChunkflowError, MissingDependencyError, UsageError

__all__ = ["MissingDependencyError", "UsageError", "describe", "run_guarded"]

EXIT_RUNTIME = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

_CREDENTIALS_HINT = (
    "for a public bucket pass --storage-option anon=true; otherwise give credentials "
    "(environment variables, the provider's config file, or --storage-option key=... "
    "--storage-option secret=...)"
)


def describe(err: BaseException) -> str:
    """One line saying what went wrong, with a hint where one helps."""
    message = str(err).strip().splitlines()[0] if str(err).strip() else ""
    name = type(err).__name__
    if "Protocol not known" in message:
        protocol = message.rpartition(":")[2].strip()
        return (f"unknown URL protocol {protocol!r} (fsspec knows none by that name; "
                "e.g. file://, s3://, gs://, https://, memory://)")
    if isinstance(err, ChunkflowError) and isinstance(err, KeyError) and message.startswith("'"):
        return f"{name}: {message}"  # a KeyError's message is the quoted key alone
    if isinstance(err, ChunkflowError) and message:
        return message  # already written for people (and may wrap a described error)
    if "credential" in (name + message).lower():
        return f"{message or name} ({name}); {_CREDENTIALS_HINT}"
    if isinstance(err, ModuleNotFoundError) and err.name:
        return f"this needs the Python package {err.name!r}, which is not installed"
    if isinstance(err, (FileNotFoundError, PermissionError)) and message:
        return message
    return f"{name}: {message}" if message else name


def run_guarded(command: str, run: Callable[[Any], int | None], args: Any) -> int:
    """Run ``run(args)`` and turn any exception into a message and an exit code."""
    debug = bool(getattr(args, "debug", False))
    prefix = f"chunkflow {command}: error:"
    try:
        return run(args) or 0
    except KeyboardInterrupt as stop:  # its text, if any, says what was cleaned up
        print(f"chunkflow {command}: interrupted" + (f"; {stop}" if str(stop) else ""),
              file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # output piped into `head`: nothing left to say
        return EXIT_RUNTIME
    except Exception as err:  # noqa: BLE001 - the command line's last line of defence
        if debug:
            traceback.print_exc()
        print(f"{prefix} {describe(err)}", file=sys.stderr)
        # A usage error stays one when a wrapper adds to it (e.g. what was removed).
        usage = isinstance(err, UsageError) or isinstance(err.__cause__, UsageError)
        return EXIT_USAGE if usage else EXIT_RUNTIME
