"""The plan of a rechunk: the source, its region, the passes and the output to create,
checked before anything is created (:func:`prepare_rechunk`).

Examples
--------
>>> import chunkflow
>>> z = chunkflow.zeros((8, 8), chunks=(1, 8), dtype="u1")
>>> plan = prepare_rechunk(z, (8, 1), max_memory="1 MiB", scheduler="sync")
>>> plan.choice.intermediate_chunks is None, len(plan.choice.passes)
(True, 1)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from dask.base import tokenize

from chunkflow.config import byte_count
from chunkflow.core.array import Array
from chunkflow.graph.casting import DEFAULT_CASTING, check_cast, check_casting
from chunkflow.graph.read import BLOCKS_PER_THREAD, writer_source
from chunkflow.graph.rechunk.arrays import (
    OutputSpec,
    TargetChunks,
    output_template,
    source_region,
    target_chunk_shape,
)
from chunkflow.graph.rechunk.memory import refuse_plan, task_budget
from chunkflow.graph.rechunk.passes import PassChoice, choose_passes, intermediate_dtype
from chunkflow.graph.scheduler import tasks_per_process
from chunkflow.jobs import metadata_part

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from chunkflow.graph.read import ArraySource
    from chunkflow.graph.scheduler import SchedulerLike
    from chunkflow.storage import StoreLike

__all__ = ["RechunkPlan", "prepare_rechunk"]


@dataclass(frozen=True)
class RechunkPlan:
    """A checked rechunk, not yet run: its passes, and what to create for it."""

    source: Array
    offset: tuple[int, ...]
    choice: PassChoice
    output: OutputSpec
    template: Array
    token: str

    @property
    def intermediate_name(self) -> str:
        """The intermediate array's path in ``temp`` (one per job)."""
        return f"chunkflow-rechunk-{self.token}"

    @property
    def intermediate_dtype(self) -> np.dtype:
        """The smaller of the source's and the output's dtypes."""
        return intermediate_dtype(self.source.dtype, self.template.dtype)

    @property
    def intermediate_fill(self) -> Any:
        """The output's fill value in the intermediate's dtype. Every element is written,
        so any value is correct; with this one, blocks that are all fill value in the
        output are not stored in the intermediate either."""
        fill = self.template.fill_value if self.template.fill_value is not None else 0
        return np.asarray(fill, self.template.dtype).astype(self.intermediate_dtype)[()]


def prepare_rechunk(source: ArraySource, chunks: TargetChunks, *,
                    max_memory: int | str, temp: StoreLike | None = None,
                    shards: Sequence[int] | None = None, zarr_format: int | None = None,
                    compressors: Any = ..., dtype: DTypeLike | None = None, selection: Any = None,
                    casting: str = DEFAULT_CASTING, scheduler: SchedulerLike = None,
                    storage_options: Mapping[str, Any] | None = None) -> RechunkPlan:
    """Open, check and plan a rechunk, creating nothing (see :func:`rechunk`).

    Examples
    --------
    >>> import chunkflow
    >>> z = chunkflow.zeros((64, 512, 512), chunks=(1, 512, 512), dtype="u2")
    >>> plan = prepare_rechunk(z, (64, 64, 64), max_memory="16 MiB", temp="unused",
    ...                        scheduler="sync")
    >>> plan.choice.intermediate_chunks, plan.choice.task_memory <= 16 * 2**20
    ((8, 64, 512), True)
    """
    array = writer_source(source, storage_options,
                          **({} if isinstance(source, Array) else {"cache": False}))
    if array.options.cache is None:
        array = array.with_options(cache=False)
    _, offset, shape = source_region(selection, array)
    chunk_shape = target_chunk_shape(chunks, array, shape)
    # The dtypes alone may rule the cast out: refused before anything is created (the
    # values are checked by each task, on the block it writes).
    out_dtype = np.dtype(dtype) if dtype is not None else array.dtype
    check_cast(array.dtype, out_dtype, check_casting(casting, "rechunk"), "rechunk")
    spec, template = output_template(array, shape, chunk_shape, shards, dtype,
                                     zarr_format, compressors, casting)
    limit = byte_count("rechunk: max_memory", max_memory)
    aligned = all(o % c == 0 and (o + n) % c == 0
                  for o, n, c in zip(offset, shape, array.chunks))
    # max_memory is one task's: the threads only set how many blocks keep them busy.
    choice = choose_passes(shape, array.chunks, template.write_chunks, array.dtype,
                           template.dtype, task_budget=task_budget(limit),
                           min_blocks=BLOCKS_PER_THREAD * tasks_per_process(scheduler),
                           source_aligned=aligned)
    if choice is None or (choice.intermediate_chunks is not None and temp is None):
        refuse_plan(choice, array, template, shape, limit, temp is not None, aligned)
    assert choice is not None
    token = tokenize(array.store.identity, array.path, offset, shape,
                     metadata_part(template), choice.passes)
    return RechunkPlan(array, offset, choice, spec, template, token)
