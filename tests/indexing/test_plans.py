"""Kept plans of basic selections: the same answers as planning afresh, never a plan
of another grid."""

from __future__ import annotations

import numpy as np

import chunkflow
from chunkflow.grid import RegularChunkGrid
from chunkflow.indexing import BasicIndexer
from chunkflow.indexing.plans import MAX_PLAN_CHUNKS, PLANS_KEPT, BasicPlans


def test_a_kept_plan_is_reused_and_equals_a_fresh_one() -> None:
    grid = RegularChunkGrid((100, 100), (10, 10))
    plans = BasicPlans()
    selection = (slice(5, 25, 2), -3)
    indexer, projections = plans.get(selection, grid)
    again = plans.get(selection, grid)
    assert again[1] is projections
    fresh = BasicIndexer(selection, grid)
    assert projections == list(fresh) and indexer.shape == fresh.shape


def test_plans_of_another_grid_large_plans_and_arrays_are_not_kept() -> None:
    plans = BasicPlans()
    small, other = RegularChunkGrid((100, 100), (10, 10)), RegularChunkGrid((100, 100), (20, 20))
    first = plans.get((slice(0, 30),), small)[1]
    assert plans.get((slice(0, 30),), other)[1] is not first  # same selection, new grid
    whole = plans.get((slice(None),), RegularChunkGrid((1000, 1000), (10, 10)))[1]
    assert len(whole) > MAX_PLAN_CHUNKS
    assert plans.get((slice(None),), RegularChunkGrid((1000, 1000), (10, 10)))[1] is not whole
    listed = plans.get((np.array(3),), small)[1]  # a 0-d array: not a key, planned afresh
    assert plans.get((np.array(3),), small)[1] is not listed
    for start in range(PLANS_KEPT + 1):
        plans.get((slice(start, start + 1),), small)
    assert len(plans._plans) == PLANS_KEPT


def test_a_handle_reads_right_after_a_resize() -> None:
    data = np.arange(40 * 40).reshape(40, 40)
    z = chunkflow.array(data, chunks=(8, 8))
    np.testing.assert_array_equal(z[4:12, 30:], data[4:12, 30:])
    z.resize((40, 50))
    z[:, 40:] = -1
    expected = np.concatenate([data, np.full((40, 10), -1)], axis=1)
    np.testing.assert_array_equal(z[4:12, 30:], expected[4:12, 30:])
    z.resize((20, 20))
    np.testing.assert_array_equal(z[4:12, 10:], data[4:12, 10:20])


def test_selection_keys_of_exact_and_abstract_integers_agree() -> None:
    # The fast exact-type checks must key numpy integers and Python ints alike, and
    # refuse what planning afresh must see (floats, arrays, booleans as entries).
    from chunkflow.indexing.plans import selection_key

    assert selection_key((slice(np.int64(2), 8), np.int32(3))) == selection_key((slice(2, 8), 3))
    assert selection_key((slice(2.0, 8),)) is None
    assert selection_key((True,)) is None and selection_key((np.array([1]),)) is None
    assert selection_key(...) == (Ellipsis,)


def test_kept_projections_carry_a_derived_slot_fresh_plans_do_not() -> None:
    from chunkflow.indexing.plans import KeptProjections

    grid = RegularChunkGrid((100, 100), (10, 10))
    plans = BasicPlans()
    kept = plans.get((slice(5, 15), slice(0, 10)), grid)[1]
    assert isinstance(kept, KeptProjections) and kept.derived is None
    assert type(plans.get((np.array(3),), grid)[1]) is list  # not a key: planned afresh
