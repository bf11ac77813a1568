"""How the command line reports failures: one line, an exit code, no traceback.

Exit codes (:data:`EXIT_CODES`): ``0`` success, ``1`` a runtime error (a missing path,
an unreachable or unauthorized URL, a failed computation), ``2`` a bad argument,
``130`` interrupted. ``--debug`` prints the traceback before the one-line message. The
message is in the command line's words (:mod:`chunkflow.cli.words`), and after an
interruption or a failure of a command that writes DST, the next lines say what to type:
the same command with ``--resume`` and ``chunkflow status DST``.

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

import shlex
import sys
import traceback
from collections.abc import Callable
from typing import Any

# UsageError and MissingDependencyError live in chunkflow.errors (imported here too).
from chunkflow.cli.words import command_line, in_cli_words
from chunkflow.errors import (
    ChunkflowError,
    MissingDependencyError,
    OutputIsSourceError,
    UsageError,
)

__all__ = ["EXIT_CODES", "MissingDependencyError", "UsageError", "describe", "next_steps",
           "run_guarded"]

EXIT_DONE = 0
EXIT_RUNTIME = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
#: Every exit code of the command line and what it means (``--help`` and the README).
EXIT_CODES = {
    EXIT_DONE: "done",
    EXIT_RUNTIME: "failed (nothing half-written is left, or with --resume, kept to resume)",
    EXIT_USAGE: "bad arguments: nothing was read or written",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
}

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


def next_steps(args: Any, *, interrupted: bool) -> list[str]:
    """What to type after a command that writes DST was interrupted or failed.

    With ``--resume`` an unfinished DST stays: the same command continues it (said only
    when DST is there, unfinished). Without, DST was removed; after an interruption the
    same command with ``--resume`` makes the next run resumable (after a failure that
    advice would not help: the cause comes first). ``args.argv`` is the command as
    typed (set by ``main``).
    """
    dst, argv = getattr(args, "dst", None), getattr(args, "argv", None)
    if dst is None or argv is None or not hasattr(args, "resume"):
        return []
    if args.resume:
        if not _unfinished(args, str(dst)):
            return []
        return [f"to continue where it stopped: {command_line(argv)}",
                f"to see what remains: chunkflow status {shlex.quote(str(dst))}"]
    if not interrupted:
        return []
    return ["nothing was kept; to record progress so that a next run can continue: "
            f"{command_line(argv, add='--resume')}"]


def _unfinished(args: Any, dst: str) -> bool:
    from chunkflow.api.unfinished import open_unfinished

    options = dict(getattr(args, "storage_options", None) or []) if "://" in dst else None
    try:
        return open_unfinished(dst, storage_options=options or None) is not None
    except Exception:  # noqa: BLE001 - advice only: an unreadable DST gets none
        return False


def run_guarded(command: str, run: Callable[[Any], int | None], args: Any) -> int:
    """Run ``run(args)`` and turn any exception into a message and an exit code."""
    debug = bool(getattr(args, "debug", False))
    prefix = f"chunkflow {command}:"
    try:
        return run(args) or 0
    except KeyboardInterrupt as stop:  # its text, if any, says what was cleaned up
        print(f"{prefix} interrupted" + (f"; {in_cli_words(str(stop), command)}"
                                         if str(stop) else ""), file=sys.stderr)
        for line in next_steps(args, interrupted=True):
            print(f"{prefix} {line}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # output piped into `head`: nothing left to say
        return EXIT_RUNTIME
    except Exception as err:  # noqa: BLE001 - the command line's last line of defence
        if debug:
            traceback.print_exc()
        print(f"{prefix} error: {in_cli_words(describe(err), command)}", file=sys.stderr)
        # A usage error stays one when a wrapper adds to it (e.g. what was removed); an
        # output that is the source is refused before anything is read or written.
        usage = isinstance(err, (UsageError, OutputIsSourceError)) \
            or isinstance(err.__cause__, UsageError)
        if usage:
            return EXIT_USAGE
        for line in next_steps(args, interrupted=False):
            print(f"{prefix} {line}", file=sys.stderr)
        return EXIT_RUNTIME
