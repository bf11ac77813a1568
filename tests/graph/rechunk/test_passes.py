"""The rechunk plan: blocks of whole chunks on both sides of every pass, within budget."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkflow.graph.rechunk.passes import (
    choose_passes,
    consolidate,
    intermediate_dtype,
    task_memory,
)

U2 = np.dtype("u2")


def _whole(block: int, chunk: int, length: int) -> bool:
    """A block edge grid of ``block`` holds whole chunks of ``chunk`` (or spans the axis)."""
    return block >= length or block % chunk == 0


@st.composite
def _case(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], int]:
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 300)) for _ in range(ndim))
    source = tuple(draw(st.integers(1, n + 5)) for n in shape)
    target = tuple(draw(st.integers(1, n + 5)) for n in shape)
    budget = draw(st.integers(2**10, 2**22))
    return shape, source, target, budget


@settings(max_examples=300, deadline=None)
@given(_case(), st.sampled_from(["u1", "u2", "f8"]))
def test_every_pass_reads_and_writes_whole_chunks_within_budget(case, dtype: str) -> None:
    shape, source, target, budget = case
    choice = choose_passes(shape, source, target, U2, np.dtype(dtype), task_budget=budget)
    if choice is None:  # only when single chunks through an intermediate do not fit
        out, mid = np.dtype(dtype), intermediate_dtype(U2, np.dtype(dtype))
        unit_in = tuple(min(s, n) for s, n in zip(source, shape))
        unit_out = tuple(min(t, n) for t, n in zip(target, shape))
        shared = tuple(min(t, n) if s >= n else s if t >= n else math.gcd(s, t)
                       for s, t, n in zip(unit_in, unit_out, shape))
        assert max(task_memory(unit_in, source, U2, shared, mid),
                   task_memory(unit_out, shared, mid, target, out)) > budget
        return
    assert choice.task_memory <= budget
    for step in choice.passes:
        for b, r, w, n in zip(step.block, step.read_chunks, step.write_chunks, shape):
            assert _whole(b, r, n) and _whole(b, w, n), (step, shape)
    first, last = choice.passes[0], choice.passes[-1]
    assert first.read_chunks == source and last.write_chunks == target
    if choice.intermediate_chunks is not None:
        assert first.write_chunks == choice.intermediate_chunks == last.read_chunks


def test_one_pass_when_the_common_block_fits() -> None:
    choice = choose_passes((100, 100), (10, 100), (100, 10), U2, U2, task_budget=2**20)
    assert choice is not None and choice.intermediate_chunks is None
    assert choice.passes[0].block == (100, 100)


def test_the_benchmark_case_goes_through_an_intermediate_in_budget() -> None:
    budget = 128 * 2**20
    choice = choose_passes((64, 4096, 4096), (1, 4096, 4096), (64, 256, 256), U2, U2,
                        task_budget=budget)
    assert choice is not None and choice.intermediate_chunks is not None
    assert choice.task_memory <= budget
    # Far fewer tasks than chunks: 64 reads of one slice, 32 writes of 64 chunks.
    counts = [math.prod(-(-n // b) for n, b in zip(choice.shape, p.block)) for p in choice.passes]
    assert counts == [64, 32]


def test_consolidation_grows_the_last_axis_first_to_even_sizes() -> None:
    assert consolidate((1, 4), (10, 16), (10, 16), lambda b: math.prod(b) <= 64) == (4, 16)
    assert consolidate((1, 4), (10, 16), (None, 16), lambda b: math.prod(b) <= 12) == (1, 8)
