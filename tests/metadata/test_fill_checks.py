"""is_all_fill and fill_mask: bit for bit, as a chunk read back from nothing holds."""

from __future__ import annotations

import numpy as np
import pytest

from chunkflow.metadata import fill_mask, is_all_fill


def _float(bits: int, dtype: str) -> np.generic:
    width = np.dtype(dtype).itemsize
    return np.array(bits, f"<u{width}").view(f"<f{width}").astype(dtype)[()]


@pytest.mark.parametrize("dtype", ["<f2", ">f4", "<f8", ">f8"])
def test_negative_zero_is_not_the_fill_zero(dtype: str) -> None:
    assert is_all_fill(np.zeros(5, dtype), np.dtype(dtype).type(0.0))
    assert not is_all_fill(np.full(5, -0.0, dtype), np.dtype(dtype).type(0.0))
    assert not is_all_fill(np.zeros(5, dtype), np.dtype(dtype).type(-0.0))
    assert is_all_fill(np.full(5, -0.0, dtype), np.dtype(dtype).type(-0.0))


@pytest.mark.parametrize("dtype", [">f8", "<f8"])
def test_nan_payloads_and_signs_differ(dtype: str) -> None:
    quiet, payload, negative = (_float(b, dtype) for b in
                                (0x7FF8000000000000, 0x7FF8000000000001, 0xFFF8000000000000))
    chunk = np.full((2, 3), quiet, dtype)
    assert is_all_fill(chunk, quiet)
    chunk[1, 2] = payload
    assert not is_all_fill(chunk, quiet)
    assert not is_all_fill(np.full(3, negative, dtype), quiet)
    assert fill_mask(chunk, quiet).tolist() == [[True] * 3, [True, True, False]]


def test_complex_parts_compared_bitwise() -> None:
    fill = np.complex128(0)
    assert is_all_fill(np.zeros(4, "c16"), fill)
    assert not is_all_fill(np.array([complex(0.0, -0.0)] * 4, ">c16"), fill)
    assert not is_all_fill(np.array([complex(-0.0, 0.0)], "<c8"), np.complex64(0))


def test_views_are_compared_without_copies() -> None:
    base = np.zeros((6, 8), ">f4")
    base[::2, ::3] = -0.0
    view = base.T[::3, ::2]  # strided, transposed, only the -0.0 elements
    assert not is_all_fill(view, np.float32(0))
    assert is_all_fill(base[1::2], np.float32(0))


def test_other_kinds() -> None:
    assert is_all_fill(np.array([b"ab", b"ab"], "S3"), np.bytes_(b"ab"))
    assert not is_all_fill(np.array([b"ab", b"ab\x01"], "S3"), np.bytes_(b"ab"))
    assert is_all_fill(np.array(["é", "é"], ">U5"), np.str_("é"))
    nat = np.datetime64("NaT", "s")
    assert is_all_fill(np.full(3, nat), nat)
    assert not is_all_fill(np.array([nat, np.datetime64(0, "s")]), nat)
    assert is_all_fill(np.zeros((0, 3), "f8"), np.float64(1))  # nothing to store


def test_structured_items_field_by_field() -> None:
    # Padding bytes between fields are not data: aligned records still match.
    dtype = np.dtype([("a", "u1"), ("b", "<f8"), ("c", "<i2", (2,))], align=True)
    fill = np.zeros((), dtype)[()]
    chunk = np.empty(4, dtype)
    chunk.view("u1")[:] = 0xAB  # garbage padding
    chunk[...] = fill
    assert is_all_fill(chunk, fill)
    chunk["b"][2] = -0.0
    assert not is_all_fill(chunk, fill)
    chunk["b"][2] = 0.0
    chunk["c"][3, 1] = 1
    assert fill_mask(chunk, fill).tolist() == [True, True, True, False]


def test_object_items() -> None:
    chunk = np.empty(3, object)
    chunk[:] = ["", "", ""]
    assert is_all_fill(chunk, "")
    chunk[1] = "x"
    assert not is_all_fill(chunk, "")


@pytest.mark.parametrize("dtype", ["<U5", "S5", ">f8", "?"])
def test_zero_dimensional_chunks(dtype: str) -> None:
    # A 0-d chunk's item is a scalar of its own length ("ab" is <U2): compare arrays.
    fill = np.zeros((), dtype)[()]
    assert is_all_fill(np.zeros((), dtype), fill)
    assert not is_all_fill(np.ones((), dtype), fill)
