"""dtypes of every kind, and arrays of them that hold each type's corner values.

A float array holds NaN (the default one, negative ones and ones with other payloads),
±0, ±inf, subnormals and the largest and smallest finite values; an integer array its
type's minimum and maximum, 0 and -1; a complex array NaN and inf in either part. The
corners are drawn often (one element in four, in arrays that have them at all), not
left to chance, because that is where chunked code goes wrong.

Examples
--------
>>> import numpy as np
>>> [float(v) for v in special_values(np.dtype("f2"))[:4]]
[0.0, -0.0, inf, -inf]
>>> [int(v) for v in special_values(np.dtype("i1"))]
[0, -1, 1, -128, 127]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from chunkflow.testing.strategies.array_shapes import shapes

__all__ = ["DTYPE_CODES", "arrays", "dtypes", "elements", "special_values"]

#: The numeric and other dtypes the strategies draw, by numpy kind character.
DTYPE_CODES: dict[str, tuple[str, ...]] = {
    "b": ("?",),
    "i": ("i1", "i2", "i4", "i8"),
    "u": ("u1", "u2", "u4", "u8"),
    "f": ("f2", "f4", "f8"),
    "c": ("c8", "c16"),
    "m": ("m8[s]", "m8[ms]"),
    "M": ("M8[s]", "M8[D]"),
    "U": ("U1", "U5"),
    "S": ("S1", "S5"),
}

# NaN bit patterns beyond numpy's default one: the sign set, and other payloads (quiet
# and signalling), by float width.
_NAN_BITS: dict[int, tuple[int, ...]] = {
    2: (0xFE00, 0x7E01, 0x7C01),
    4: (0xFFC00000, 0x7FC00001, 0x7F800001),
    8: (0xFFF8000000000000, 0x7FF8000000000001, 0x7FF0000000000001),
}
_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def dtypes(
    *, kinds: str = "biuf", byteorder: str = "=", codes: Sequence[str] | None = None
) -> st.SearchStrategy[np.dtype]:
    """A dtype of one of ``kinds`` (numpy kind characters, see :data:`DTYPE_CODES`).

    Parameters
    ----------
    kinds : str
        ``"b"`` bool, ``"i"``/``"u"`` integers, ``"f"`` floats (half too), ``"c"``
        complex, ``"m"``/``"M"`` timedelta and datetime, ``"U"``/``"S"`` strings.
    byteorder : {"=", "<", ">", "any"}
        Native order, one order, or either (``"any"``; single bytes have none).
    codes : sequence of str, optional
        Exactly these dtype strings instead of ``kinds``.

    Examples
    --------
    >>> from hypothesis import find
    >>> find(dtypes(kinds="f", byteorder=">"), lambda d: d.itemsize == 8).str
    '>f8'
    """
    names = list(codes) if codes is not None else [c for k in kinds for c in DTYPE_CODES[k]]
    if not names:
        raise ValueError(f"dtypes: no dtype of kinds {kinds!r}")
    base = st.sampled_from(names).map(np.dtype)
    if byteorder == "=":
        return base
    if byteorder == "<":
        return base.map(lambda d: d.newbyteorder("<"))
    if byteorder == ">":
        return base.map(lambda d: d.newbyteorder(">"))
    if byteorder != "any":
        raise ValueError(f"dtypes: byteorder must be '=', '<', '>' or 'any', got {byteorder!r}")
    return st.one_of(base.map(lambda d: d.newbyteorder("<")), base.map(lambda d: d.newbyteorder(">")))


def _float_specials(dtype: np.dtype) -> list[Any]:
    info = np.finfo(dtype)
    native = dtype.newbyteorder("=")
    values = [0.0, -0.0, np.inf, -np.inf, np.nan, info.max, info.min, info.tiny,
              info.smallest_subnormal, -info.smallest_subnormal, 1.0, -1.0, 0.5]
    specials = [native.type(v) for v in values]
    for bits in _NAN_BITS[native.itemsize]:
        specials.append(np.array(bits, _UINT[native.itemsize]).view(native)[()])
    return specials


def special_values(dtype: np.dtype) -> list[Any]:
    """The corner values of ``dtype``, as scalars of it (NaN payloads kept).

    Examples
    --------
    >>> import numpy as np
    >>> special_values(np.dtype("?"))
    [np.False_, np.True_]
    >>> np.isnan(special_values(np.dtype(">f4"))[-1])
    np.True_
    """
    dtype = np.dtype(dtype)
    native = dtype.newbyteorder("=")
    kind = dtype.kind
    if kind == "b":
        return [np.False_, np.True_]
    if kind in "iu":
        info = np.iinfo(native)
        values = [0, 1, info.max] if kind == "u" else [0, -1, 1, info.min, info.max]
        return [native.type(v) for v in values]
    if kind == "f":
        return _float_specials(native)
    if kind == "c":
        part = np.dtype(f"f{native.itemsize // 2}")
        corners = [v for v in _float_specials(part)[:6]]
        return [native.type(complex(r, i)) for r in corners[:5] for i in corners[:3]]
    if kind in "mM":
        unit = np.datetime_data(native)[0]
        return [native.type("NaT"), native.type(0, unit), native.type(-1, unit),
                native.type(np.iinfo(np.int64).max, unit), native.type(np.iinfo(np.int64).min + 1, unit)]
    if kind == "U":
        return [native.type(""), native.type("é" * (native.itemsize // 4))]
    if kind == "S":
        # numpy drops trailing NULs: b"\x00" in S1 is b"", so S1 has b"\xff" instead.
        corner = b"\x00\xff" if native.itemsize > 1 else b"\xff"
        return [native.type(b""), native.type(corner)]
    raise ValueError(f"special_values: no corner values for dtype {dtype}")


def elements(dtype: np.dtype) -> st.SearchStrategy[Any]:
    """Any value of ``dtype``: its corners (one draw in four) or any other.

    Examples
    --------
    >>> from hypothesis import find
    >>> import numpy as np
    >>> bool(np.isnan(find(elements(np.dtype("f4")), lambda v: np.isnan(v))))
    True
    """
    dtype = np.dtype(dtype)
    native = dtype.newbyteorder("=")
    if native.kind in "mM":
        unit = np.datetime_data(native)[0]
        anything = st.integers(-(2**62), 2**62).map(lambda v: native.type(v, unit))
    elif native.kind == "U":
        # numpy drops trailing NULs (as for bytes): "a\x00" is stored as "a".
        anything = st.text(max_size=native.itemsize // 4).map(
            lambda s: native.type(s.rstrip("\x00")))
    elif native.kind == "S":
        anything = st.binary(max_size=native.itemsize).map(lambda b: native.type(b.rstrip(b"\x00")))
    else:
        anything = hnp.from_dtype(native).map(native.type)
    return st.one_of(st.sampled_from(special_values(native)), anything, anything, anything)


def arrays(
    dtype: np.dtype | st.SearchStrategy[np.dtype] | None = None,
    shape: tuple[int, ...] | st.SearchStrategy[tuple[int, ...]] | None = None,
) -> st.SearchStrategy[np.ndarray]:
    """An array of ``dtype`` and ``shape`` (each a value or a strategy) whose elements
    come from :func:`elements`; the defaults draw a numeric dtype and a shape of 0 to 4
    dimensions with zero-length sides now and then.

    Examples
    --------
    >>> from hypothesis import find
    >>> import numpy as np
    >>> find(arrays(np.dtype("i2"), (3,)), lambda a: a.min() < 0).dtype
    dtype('int16')
    """
    dtype_strategy = dtype if isinstance(dtype, st.SearchStrategy) else (
        dtypes() if dtype is None else st.just(np.dtype(dtype)))
    shape_strategy = shape if isinstance(shape, st.SearchStrategy) else (
        shapes() if shape is None else st.just(tuple(shape)))

    @st.composite
    def draw_array(draw: st.DrawFn) -> np.ndarray:
        drawn_dtype = draw(dtype_strategy)
        drawn_shape = draw(shape_strategy)
        native = drawn_dtype.newbyteorder("=")
        data = draw(hnp.arrays(native, drawn_shape, elements=elements(native),
                               fill=elements(native)))
        return data.astype(drawn_dtype)

    return draw_array()
