"""A job's identity: the token of what it computes, built in one place.

Every writer that can resume (``map_chunks``, ``store``, ``to_chunkflow``, ``rechunk``,
``pyramid``, ``copy``, the CLI) names its job with :func:`job_identity`: the function
and its arguments (:func:`function_parts`, or the user's ``job_name=``), the plan (the
block grid, regions, passes...), the output's metadata (:func:`metadata_part`) and each
source's location, metadata and stored size (:func:`source_parts`). Two runs with the
same identity are the same job; a resume of a different one is refused, naming the
parts that changed.

Examples
--------
>>> import numpy as np
>>> import chunkflow
>>> src = chunkflow.array(np.arange(16.0).reshape(4, 4), chunks=(2, 2))
>>> out = chunkflow.zeros((4, 4), chunks=(2, 2))
>>> spec = job_identity(out, plan={"block plan": (2, 2)}, sources=[src],
...                     function=function_parts(np.sqrt, {}, None))
>>> list(spec.parts)
['function', 'arguments', 'block plan', 'output metadata', "source 0 ('/')", "source 0 ('/') stored bytes"]
>>> spec.token == job_identity(out, plan={"block plan": (2, 2)}, sources=[src],
...                            function=function_parts(np.sqrt, {}, None)).token
True
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import dask
from dask.base import tokenize

from chunkflow.errors import JobTokenError
from chunkflow.jobs.job import JobSpec
from chunkflow.jobs.stored_size import stored_bytes
from chunkflow.storage import Store

__all__ = ["function_parts", "job_identity", "metadata_part", "source_parts"]


def function_parts(func: Any, arguments: Any, job_name: str | None,
                   *, what: str = "function", strict: bool = True) -> dict[str, str]:
    """Tokens of ``func`` and ``arguments`` (``{}`` when ``job_name`` names the job).

    A writer calls it before it creates anything, so that a function that cannot be
    tokenized is refused first (``strict``: with ``resume=True``), and hands the
    result to :func:`job_identity`. Not ``strict`` (a job recorded without
    ``resume=True``), such a function gets a token of this run only: a later
    ``resume=True`` of its output is refused as another job, with the advice to name
    the job.

    Raises
    ------
    JobTokenError
        ``strict``, and ``func`` or ``arguments`` cannot be tokenized
        deterministically; the message says to pass ``job_name=``.

    Examples
    --------
    >>> import numpy as np
    >>> sorted(function_parts(np.sqrt, {"k": 1}, None)), function_parts(np.sqrt, {}, "j")
    (['arguments', 'function'], {})
    """
    if job_name is not None:
        if not isinstance(job_name, str) or not job_name:
            raise JobTokenError(f"job_name must be a non-empty str, got {job_name!r}")
        return {}
    try:
        with dask.config.set({"tokenize.ensure-deterministic": True}):
            return {what: tokenize(func), "arguments": tokenize(arguments)}
    except Exception as error:  # dask raises RuntimeError, pickling any error
        if not strict:
            return {what: f"not deterministic ({uuid.uuid4().hex})", "arguments": ""}
        name = getattr(func, "__qualname__", None) or type(func).__name__
        raise JobTokenError(
            f"resume=True: the {what} {name!r} or its arguments cannot be tokenized "
            f"deterministically ({error}); pass job_name='...' to name the job instead "
            "(the same name in every run of it)"
        ) from error


def metadata_part(array: Any) -> str:
    """A token of ``array``'s metadata document, without its attributes or location."""
    document = {k: v for k, v in array.metadata.to_dict().items() if k != "attributes"}
    return tokenize(json.dumps(document, sort_keys=True, default=str))


def _stored(array: Any) -> bool:
    return isinstance(getattr(array, "store", None), Store)


def source_parts(sources: Sequence[Any], out: Any = None) -> dict[str, str]:
    """Per source: its location and metadata, and the total size of its stored keys.

    The size comes from a listing of the source's prefix (a folder walk, or
    object-store listings that return sizes, split along its folders for large
    sources: :mod:`chunkflow.jobs.stored_size`): it sees chunks added, deleted or
    rewritten with another size, not a rewrite of the same size. A source that is the
    output itself is compared by location and metadata only (the job changes it). A
    dask array is named by its graph's name (deterministic for arrays built from
    stored or numpy data). A source that is not a stored chunkflow array (a numpy
    array) is described by its type, shape and dtype.
    """
    parts = {}
    for i, source in enumerate(sources):
        if hasattr(source, "__dask_graph__") and isinstance(getattr(source, "name", None), str):
            parts[f"source {i} (dask)"] = str(source.name)
            continue
        if not _stored(source):
            parts[f"source {i}"] = (f"{type(source).__name__} {tuple(source.shape)} "
                                    f"{source.dtype}")
            continue
        label = f"source {i} ({source.path or '/'!r})"
        parts[label] = tokenize(source.store.identity, source.path, metadata_part(source))
        same = _stored(out) and (out.store.identity, out.path) == (source.store.identity,
                                                                   source.path)
        if not same:
            parts[f"{label} stored bytes"] = str(stored_bytes(source))
    return parts


def job_identity(out: Any, *, plan: Mapping[str, Any],
                 sources: Sequence[Any] | Mapping[str, str] = (),
                 function: Mapping[str, str] | None = None, job_name: str | None = None,
                 kept: Mapping[str, Any] | None = None) -> JobSpec:
    """The :class:`~chunkflow.jobs.JobSpec` of a job: what it computes, as named parts.

    Parameters
    ----------
    out : chunkflow.Array
        The output (or an array with the output's metadata): its metadata is a part,
        so another dtype, chunk shape or codec is another job.
    plan : mapping
        The plan's named parts (``"block plan"``, regions, passes...): a str is kept
        as given, anything else is tokenized.
    sources : sequence or mapping
        The arrays read (:func:`source_parts`), or their parts already computed (one
        listing per source for jobs on several outputs).
    function : mapping, optional
        The function's and its arguments' tokens (:func:`function_parts`).
    job_name : str, optional
        The user's name for the job, which stands in for an untokenizable function.
    kept : mapping, optional
        What a resume needs to rebuild the same plan (blocks per task, stages): kept
        in the output's mark, but no part of the token.
    """
    parts = dict(function or {})
    parts.update({name: value if isinstance(value, str) else tokenize(value)
                  for name, value in plan.items()})
    parts["output metadata"] = metadata_part(out)
    parts.update(sources if isinstance(sources, Mapping) else source_parts(sources, out))
    return JobSpec(parts, job_name, dict(kept or {}))
