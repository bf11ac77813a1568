"""The case matrix of ``test_interop.py``: what each interoperability case writes.

A :class:`Case` describes one array in library-neutral terms: v2 codecs as numcodecs
config dicts, v3 codecs as ``zarr.json`` codec documents, fill values as NumPy
scalars. ``test_interop.py`` translates a case into each writer's own API
(chunkflow, zarr-python 3, tensorstore) and compares what every reader sees with
:func:`expected_values`.

Cases are small (a handful of chunks) so that the whole matrix, run against two
peers in both directions, stays within a minute on two cores.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "CASES",
    "VLEN",
    "Case",
    "case_dtype",
    "chunk_count",
    "chunk_key",
    "expected_values",
    "fill_scalar",
    "make_data",
    "read_fill",
    "region_of",
]

#: Marks variable-length UTF-8 strings (numpy has no fixed dtype for them).
VLEN = "vlen-utf8"

#: Unicode that needs more than one UTF-8 byte, so encodings cannot cheat with ASCII.
_ALPHABET = "abcXYZ019 éßø漢字🙂"

DtypeSpec = str | tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Case:
    """One array, written by one library and read by another.

    ``compressor`` / ``filters`` (v2) and ``codecs`` (v3) of ``None`` mean "the
    writer's own default pipeline" except where ``no_compressor`` says otherwise:
    mixing the libraries' defaults is itself part of what interop must survive.
    """

    id: str
    zarr_format: int
    dtype: DtypeSpec = "<i4"
    shape: tuple[int, ...] = (7, 11)
    chunks: tuple[int, ...] = (3, 4)
    #: ``"default"`` means the dtype's zero ("" for strings), passed explicitly to all
    #: writers so that they agree; ``None`` (v2 only) is the ``null`` fill value.
    fill_value: Any = "default"
    order: str = "C"
    compressor: dict[str, Any] | None = None
    no_compressor: bool = False
    filters: tuple[dict[str, Any], ...] | None = None
    codecs: tuple[dict[str, Any], ...] | None = None
    #: v2 ``dimension_separator``, or the v3 ``chunk_key_encoding`` separator.
    separator: str | None = None
    #: v3 ``chunk_key_encoding`` name (``"default"`` or ``"v2"``).
    key_encoding: str | None = None
    dimension_names: tuple[str | None, ...] | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    #: ``"all"`` writes everything; ``"partial"`` leaves chunks never written (missing).
    region: str = "all"

    def __str__(self) -> str:  # the pytest id
        return self.id


def case_dtype(case: Case) -> np.dtype:
    """The NumPy dtype of ``case`` (``object`` for variable-length strings)."""
    if case.dtype == VLEN:
        return np.dtype(object)
    if isinstance(case.dtype, tuple):
        return np.dtype(list(case.dtype))
    return np.dtype(case.dtype)


def fill_scalar(case: Case) -> Any:
    """The fill value every writer is given (``None`` only for a v2 ``null``)."""
    dtype = case_dtype(case)
    if case.fill_value is None:
        return None
    if isinstance(case.fill_value, str) and case.fill_value == "default":
        if case.dtype == VLEN:
            return ""
        return np.zeros((), dtype)[()]
    if case.dtype == VLEN:
        return str(case.fill_value)
    return np.asarray(case.fill_value, dtype=dtype)[()]


def read_fill(case: Case) -> Any:
    """What a missing chunk reads as: the fill value, or zeros for a v2 ``null``."""
    value = fill_scalar(case)
    if value is None:
        return np.zeros((), case_dtype(case))[()]
    return value


def region_of(case: Case) -> tuple[slice, ...]:
    """The selection the writers assign; elsewhere chunks stay missing."""
    if case.region == "all" or not case.shape:
        return tuple(slice(None) for _ in case.shape)
    # The first chunk row only, cut mid-chunk: a read-modify-write on the last touched
    # chunk and whole chunks that no writer ever stores.
    first = min(case.shape[0], case.chunks[0] + 1)
    return (slice(0, first),) + tuple(slice(None) for _ in case.shape[1:])


def _random_strings(rng: np.random.Generator, size: int, max_len: int) -> list[str]:
    chars = list(_ALPHABET)
    return ["".join(rng.choice(chars, size=int(rng.integers(0, max_len + 1)))) for _ in range(size)]


def _random_of(dtype: np.dtype, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    size = int(np.prod(shape, dtype=np.int64))
    kind = dtype.kind
    if dtype.fields is not None:
        out = np.zeros(shape, dtype)
        for name in dtype.names or ():
            out[name] = _random_of(dtype.fields[name][0], shape, rng)
        return out
    if kind == "b":
        return rng.random(shape) < 0.5
    if kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype.newbyteorder("="),
                            endpoint=True).astype(dtype)
    if kind == "f":
        return (rng.standard_normal(shape) * 1000).astype(dtype)
    if kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if kind in "Mm":
        # Stay away from NaT (int64 min) except where placed on purpose.
        return rng.integers(-(10**15), 10**15, size=shape).astype("<i8").view(dtype)
    if kind == "S":
        raw = rng.integers(1, 256, size=(size, dtype.itemsize), dtype=np.uint8)
        # Some shorter items: trailing NULs are how NumPy spells a short bytes value.
        raw[::3, dtype.itemsize // 2 :] = 0
        return raw.view(dtype).reshape(shape)
    if kind == "U":
        return np.array(_random_strings(rng, size, dtype.itemsize // 4), dtype).reshape(shape)
    if kind == "O":
        out = np.empty(size, dtype=object)
        out[:] = _random_strings(rng, size, 12)
        return out.reshape(shape)
    raise AssertionError(f"no data generator for {dtype}")


def _add_specials(data: np.ndarray) -> None:
    """Put the values encoders mishandle (NaN, ±Inf, NaT, extremes) into ``data``."""
    flat = data.reshape(-1)
    if flat.size < 4:
        return
    kind = data.dtype.kind
    if kind == "f":
        flat[1:4] = [np.nan, np.inf, -np.inf]
    elif kind == "c":
        flat[1:4] = [complex(np.nan, 1.0), complex(np.inf, -np.inf), complex(-0.0, np.nan)]
    elif kind in "Mm":
        flat[1] = np.array("NaT", dtype=data.dtype)
    elif kind in "iu":
        info = np.iinfo(data.dtype)
        flat[1:3] = [info.min, info.max]


def make_data(case: Case) -> np.ndarray:
    """The full array the writers take their region from (deterministic per case).

    The last chunk is set to the fill value everywhere, so writers that skip
    all-fill chunks leave it missing and readers must produce the fill value.
    """
    dtype = case_dtype(case)
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    data = _random_of(dtype, case.shape, rng)
    if dtype.fields is None:
        _add_specials(data)
    if case.shape and int(np.prod(case.shape)) > 0 and chunk_count(case) > 1:
        last = tuple(
            slice(((n - 1) // c) * c, n) for n, c in zip(case.shape, case.chunks, strict=True)
        )
        data[last] = read_fill(case)
    return data


def chunk_count(case: Case) -> int:
    """Number of chunks in the grid (edge chunks included)."""
    return int(np.prod([-(-n // c) for n, c in zip(case.shape, case.chunks, strict=True)]))


def expected_values(case: Case, data: np.ndarray) -> np.ndarray:
    """What any reader must return: ``data`` in the written region, fill elsewhere."""
    out = np.empty(case.shape, dtype=data.dtype)
    out[...] = read_fill(case)
    region = region_of(case)
    out[region] = data[region]
    return out


def chunk_key(case: Case, coords: tuple[int, ...]) -> str:
    """The store key of chunk ``coords`` under the case's key encoding."""
    if case.zarr_format == 2:
        sep = case.separator or "."
        return sep.join(map(str, coords)) if coords else "0"
    sep = case.separator or ("/" if (case.key_encoding or "default") == "default" else ".")
    if case.key_encoding == "v2":
        return sep.join(map(str, coords)) if coords else "0"
    return sep.join(["c", *map(str, coords)])


# --------------------------------------------------------------------------- matrix

_BLOSC_V2 = {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}
_BYTES_LE = {"name": "bytes", "configuration": {"endian": "little"}}
_BYTES_BE = {"name": "bytes", "configuration": {"endian": "big"}}

_SCALAR_DTYPES: tuple[tuple[str, str], ...] = (
    ("bool", "|b1"), ("int8", "|i1"), ("int16", "<i2"), ("int32", "<i4"), ("int64", "<i8"),
    ("uint8", "|u1"), ("uint16", "<u2"), ("uint32", "<u4"), ("uint64", "<u8"),
    ("float16", "<f2"), ("float32", "<f4"), ("float64", "<f8"),
    ("complex64", "<c8"), ("complex128", "<c16"),
    ("datetime64-ns", "<M8[ns]"), ("datetime64-s", "<M8[s]"), ("timedelta64-ms", "<m8[ms]"),
    ("bytes-S5", "|S5"), ("unicode-U3", "<U3"),
)  # fmt: skip
_STRUCTURED = (("x", "<i4"), ("y", "<f8"), ("z", "|u1"))
#: Big-endian and bytes fields: byte order and |S inside a structured item.
_STRUCTURED_BYTES = (("id", ">u2"), ("tag", "|S3"))


def _dtype_cases(fmt: int) -> list[Case]:
    cases = [Case(f"v{fmt}-dtype-{name}", fmt, dtype=dt) for name, dt in _SCALAR_DTYPES]
    cases.append(Case(f"v{fmt}-dtype-structured", fmt, dtype=_STRUCTURED))
    cases.append(Case(f"v{fmt}-dtype-structured-bytes", fmt, dtype=_STRUCTURED_BYTES))
    cases.append(Case(f"v{fmt}-dtype-vlen-str", fmt, dtype=VLEN))
    if fmt == 2:
        # v2 keeps the byte order in the dtype: big-endian data on disk.
        cases += [Case("v2-dtype-int32-be", 2, dtype=">i4"),
                  Case("v2-dtype-float64-be", 2, dtype=">f8"),
                  Case("v2-dtype-complex128-be", 2, dtype=">c16")]
    return cases


def _fill_cases(fmt: int) -> list[Case]:
    p = f"v{fmt}-fill"
    cases = [
        Case(f"{p}-float64-nan", fmt, dtype="<f8", fill_value=np.nan),
        Case(f"{p}-float32-nan-missing", fmt, dtype="<f4", fill_value=np.nan, region="partial"),
        Case(f"{p}-float64-inf", fmt, dtype="<f8", fill_value=np.inf, region="partial"),
        Case(f"{p}-float32-neg-inf", fmt, dtype="<f4", fill_value=-np.inf, region="partial"),
        Case(f"{p}-float16-nan", fmt, dtype="<f2", fill_value=np.nan, region="partial"),
        Case(f"{p}-int16-neg7-missing", fmt, dtype="<i2", fill_value=-7, region="partial"),
        Case(f"{p}-uint64-max", fmt, dtype="<u8", fill_value=2**64 - 1, region="partial"),
        Case(f"{p}-int64-min", fmt, dtype="<i8", fill_value=-(2**63), region="partial"),
        Case(f"{p}-uint8-200", fmt, dtype="|u1", fill_value=200, region="partial"),
        Case(f"{p}-bool-true", fmt, dtype="|b1", fill_value=True, region="partial"),
        Case(f"{p}-complex128", fmt, dtype="<c16", fill_value=complex(1.5, -2.0),
             region="partial"),
        Case(f"{p}-complex64-nan", fmt, dtype="<c8", fill_value=complex(np.nan, 1.0),
             region="partial"),
        Case(f"{p}-datetime64-nat", fmt, dtype="<M8[ns]", fill_value=np.datetime64("NaT"),
             region="partial"),
        Case(f"{p}-datetime64-s-value", fmt, dtype="<M8[s]",
             fill_value=np.datetime64("2001-02-03T04:05:06"), region="partial"),
        Case(f"{p}-bytes-short", fmt, dtype="|S5", fill_value=b"ab", region="partial"),
        Case(f"{p}-unicode", fmt, dtype="<U3", fill_value="zé", region="partial"),
        Case(f"{p}-structured", fmt, dtype=_STRUCTURED, fill_value=(3, 2.5, 7),
             region="partial"),
        Case(f"{p}-vlen-str", fmt, dtype=VLEN, fill_value="n/a", region="partial"),
    ]
    if fmt == 2:
        cases.append(Case("v2-fill-null-missing", 2, dtype="<f8", fill_value=None,
                          region="partial"))
    return cases


def _v2_codec_cases() -> list[Case]:
    cases = []
    for cname in ("lz4", "zstd"):
        for shuffle in (0, 1, 2):
            blosc = dict(_BLOSC_V2, cname=cname, shuffle=shuffle, clevel=3)
            cases.append(Case(f"v2-codec-blosc-{cname}-shuffle{shuffle}", 2, dtype="<f4",
                              compressor=blosc))
    cases += [
        Case("v2-codec-zstd", 2, compressor={"id": "zstd", "level": 3}),
        Case("v2-codec-zlib", 2, compressor={"id": "zlib", "level": 4}),
        Case("v2-codec-gzip", 2, compressor={"id": "gzip", "level": 4}),
        Case("v2-codec-bz2", 2, compressor={"id": "bz2", "level": 2}),
        Case("v2-codec-lzma", 2, compressor={"id": "lzma", "format": 1, "check": -1,
                                              "preset": None, "filters": None}),
        Case("v2-codec-none", 2, dtype="<f8", no_compressor=True),
        Case("v2-codec-none-uint8", 2, dtype="|u1", no_compressor=True),
        Case("v2-filter-delta-zlib", 2, dtype="<i8",
             filters=({"id": "delta", "dtype": "<i8"},), compressor={"id": "zlib", "level": 1}),
        Case("v2-filter-delta-nocompressor", 2, dtype="<i4",
             filters=({"id": "delta", "dtype": "<i4"},), no_compressor=True),
    ]
    return cases


def _v3_codec_cases() -> list[Case]:
    def blosc(cname: str, shuffle: str, typesize: int) -> dict[str, Any]:
        return {"name": "blosc", "configuration": {"cname": cname, "clevel": 3,
                                                  "shuffle": shuffle, "typesize": typesize,
                                                  "blocksize": 0}}

    def v3(name: str, codecs: list[dict[str, Any]], dtype: str = "<i4", **kw: Any) -> Case:
        return Case(f"v3-codec-{name}", 3, dtype=dtype, codecs=tuple(codecs), **kw)

    def sharded(inner: list[int], codecs: list[dict[str, Any]],
                index_location: str = "end") -> dict[str, Any]:
        return {"name": "sharding_indexed", "configuration": {
            "chunk_shape": inner, "codecs": codecs,
            "index_codecs": [_BYTES_LE, {"name": "crc32c"}], "index_location": index_location}}

    zstd = {"name": "zstd", "configuration": {"level": 1, "checksum": False}}

    return [
        v3("bytes-little", [_BYTES_LE]),
        v3("bytes-big", [_BYTES_BE]),
        v3("bytes-big-float64", [_BYTES_BE], dtype="<f8"),
        v3("bytes-big-complex64", [_BYTES_BE], dtype="<c8"),
        v3("blosc-lz4-shuffle", [_BYTES_LE, blosc("lz4", "shuffle", 4)]),
        v3("blosc-zstd-bitshuffle", [_BYTES_LE, blosc("zstd", "bitshuffle", 8)], dtype="<f8"),
        v3("blosc-lz4-noshuffle", [_BYTES_BE, blosc("lz4", "noshuffle", 2)], dtype="<u2"),
        v3("gzip", [_BYTES_LE, {"name": "gzip", "configuration": {"level": 4}}]),
        v3("zstd", [_BYTES_LE, {"name": "zstd", "configuration": {"level": 3,
                                                                  "checksum": False}}]),
        v3("zstd-checksum", [_BYTES_BE, {"name": "zstd", "configuration": {"level": 1,
                                                                           "checksum": True}}]),
        v3("crc32c", [_BYTES_LE, {"name": "crc32c"}]),
        v3("gzip-crc32c", [_BYTES_LE, {"name": "gzip", "configuration": {"level": 1}},
                           {"name": "crc32c"}]),
        v3("transpose-2d", [{"name": "transpose", "configuration": {"order": [1, 0]}},
                            _BYTES_LE]),
        v3("transpose-3d-zstd", [{"name": "transpose", "configuration": {"order": [2, 0, 1]}},
                                 _BYTES_BE, {"name": "zstd", "configuration": {"level": 1,
                                                                               "checksum": False}}],
           shape=(5, 6, 7), chunks=(2, 4, 3)),
        v3("sharding", [sharded([2, 2], [_BYTES_LE, blosc("lz4", "shuffle", 4)])],
           chunks=(4, 4)),
        v3("sharding-index-start", [sharded([3, 2], [_BYTES_BE, zstd], "start")],
           dtype="<f8", chunks=(6, 4), fill_value=np.nan, region="part"),
        v3("sharding-partial", [sharded([2, 4], [_BYTES_LE])], dtype="<u2",
           shape=(9, 12), chunks=(4, 8), fill_value=7, region="part"),
        v3("sharding-transpose", [{"name": "transpose", "configuration": {"order": [1, 0]}},
                                  sharded([2, 2], [_BYTES_LE, zstd])], chunks=(4, 6)),
    ]


def _layout_cases(fmt: int) -> list[Case]:
    p = f"v{fmt}"
    cases = [
        Case(f"{p}-order-F", fmt, dtype="<i4", order="F"),
        Case(f"{p}-order-F-3d", fmt, dtype="<f8", order="F", shape=(5, 6, 7), chunks=(2, 4, 3)),
        Case(f"{p}-edge-1d", fmt, dtype="<i2", shape=(10,), chunks=(4,)),
        Case(f"{p}-exact-multiple", fmt, dtype="<u4", shape=(6, 8), chunks=(3, 4)),
        Case(f"{p}-chunk-larger-than-shape", fmt, dtype="<f4", shape=(5, 3), chunks=(8, 8)),
        Case(f"{p}-chunk-larger-than-shape-raw", fmt, dtype="<f4", shape=(5, 3), chunks=(8, 8),
             no_compressor=True),
        Case(f"{p}-3d-edges", fmt, dtype="<i8", shape=(5, 6, 7), chunks=(2, 4, 3)),
        Case(f"{p}-0d", fmt, dtype="<f8", shape=(), chunks=()),
        Case(f"{p}-0d-int-fill", fmt, dtype="<i4", shape=(), chunks=(), fill_value=5),
        Case(f"{p}-zero-length", fmt, dtype="<f4", shape=(0, 5), chunks=(1, 2),
             fill_value=np.nan),
        Case(f"{p}-zero-length-1d", fmt, dtype="<i4", shape=(0,), chunks=(1,)),
        Case(f"{p}-attributes", fmt, attributes={
            "title": "interop ✓", "n": 3, "pi": 3.25, "flag": True, "none": None,
            "list": [1, "two", [3.5]], "nested": {"a": {"b": []}},
        }),
    ]
    if fmt == 2:
        cases += [
            Case("v2-separator-dot", 2, separator="."),
            Case("v2-separator-slash", 2, separator="/"),
            Case("v2-separator-slash-3d-order-F", 2, dtype="<f4", separator="/", order="F",
                 shape=(5, 6, 7), chunks=(2, 4, 3), region="partial"),
        ]
    else:
        cases += [
            Case("v3-keys-default-slash", 3, key_encoding="default", separator="/"),
            Case("v3-keys-default-dot", 3, key_encoding="default", separator="."),
            Case("v3-keys-v2-dot", 3, key_encoding="v2", separator="."),
            Case("v3-keys-v2-slash", 3, key_encoding="v2", separator="/"),
            Case("v3-keys-v2-dot-0d", 3, key_encoding="v2", separator=".", shape=(),
                 chunks=()),
            Case("v3-dimension-names", 3, dimension_names=("y", "x")),
            Case("v3-dimension-names-partial", 3, dimension_names=("t", None, "x"),
                 shape=(4, 3, 5), chunks=(2, 2, 2), attributes={"units": "m"}),
        ]
    return cases


CASES: list[Case] = [
    *_dtype_cases(2), *_fill_cases(2), *_v2_codec_cases(), *_layout_cases(2),
    *_dtype_cases(3), *_fill_cases(3), *_v3_codec_cases(), *_layout_cases(3),
]

_ids = [c.id for c in CASES]
assert len(_ids) == len(set(_ids)), "case ids must be unique (pytest-xdist compares them)"
del _ids
