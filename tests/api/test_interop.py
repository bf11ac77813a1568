"""Interoperability with zarr-python 3 and tensorstore, in both directions.

Every case of :mod:`interop_cases` runs four times:

* chunkflow writes, zarr-python reads;
* chunkflow writes, tensorstore reads;
* zarr-python writes, chunkflow reads;
* tensorstore writes, chunkflow reads.

Values must be identical (NaN-aware, and the dtype must match up to byte order),
attributes identical where the peer exposes them (tensorstore has no v2 attributes),
and v3 dimension names identical. Files on disk are checked only where the format
fixes them (chunk key spelling), never as raw JSON text: peers format it differently.

A peer that cannot express a case is listed in :func:`peer_limitation`. Such a case is
still attempted, and skipped only if the peer really raises, so a limitation lifted by
a newer peer release turns into a passing test instead of a silent skip.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numcodecs
import numpy as np
import pytest
import tensorstore as ts
import zarr
import zarr.codecs
import zarr.registry

import chunkflow
from tests.helpers.interop_cases import (
    CASES,
    VLEN,
    Case,
    case_dtype,
    chunk_count,
    chunk_key,
    expected_values,
    fill_scalar,
    make_data,
    region_of,
)

PEERS = ("zarr", "tensorstore")
T = TypeVar("T")

# zarr-python warns that S / U / structured / datetime v3 data types have no finished
# spec; writing them is the point of those cases.
pytestmark = pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning")


@dataclass
class Observed:
    """What a reader reports about an array; ``None`` = the reader does not expose it."""

    values: np.ndarray
    attributes: dict[str, Any] | None
    dimension_names: tuple[str | None, ...] | None


# --------------------------------------------------------------------------- limitations


def _kinds(dtype: np.dtype) -> set[str]:
    if dtype.fields is None:
        return {dtype.kind}
    return set().union(*(_kinds(dtype.fields[name][0]) for name in dtype.names or ()))


def peer_limitation(peer: str, case: Case, action: str) -> str | None:
    """Why ``peer`` cannot ``action`` ("read" or "write") ``case``, or None when it
    should manage.

    Each entry was established by running the peer on its own (tensorstore 0.1.86,
    zarr-python 3.1.6): it refuses to create such an array, or its own write-then-read
    round trip loses the data. :func:`attempt` re-checks this on every run.
    """
    dtype = case_dtype(case)
    kinds = _kinds(dtype)
    if peer == "tensorstore":
        driver = "zarr" if case.zarr_format == 2 else "zarr3"
        if case.dtype == VLEN:
            return f"tensorstore ({driver}) does not support variable-length strings"
        if kinds & {"M", "m"}:
            return f"tensorstore ({driver}) has no datetime64/timedelta64 data type"
        if "U" in kinds:
            return f"tensorstore ({driver}) has no fixed-length unicode data type"
        if case.zarr_format == 3 and "S" in kinds:
            return "tensorstore (zarr3) has no null_terminated_bytes data type"
        if action == "read" and "S" in kinds:
            return ("tensorstore's Python binding hands out its 'char' elements (|S data) "
                    "as empty |S0 items")
        if case.zarr_format == 2 and case.filters:
            return "tensorstore (zarr) does not support v2 filters"
        if case.zarr_format == 2 and (case.compressor or {}).get("id") == "lzma":
            return "tensorstore (zarr) has no lzma compressor"
    if peer == "zarr" and action == "write" and case.zarr_format == 3 and dtype.fields:
        if any(dtype.fields[n][0].byteorder == ">" for n in dtype.names or ()):
            return ("zarr-python 3.1.6 stores big-endian structured fields unswapped under a "
                    "bare v3 bytes codec (its own round trip byte-swaps them)")
    return None


def attempt(reason: str | None, action: Callable[[], T]) -> T:
    """Run a peer action; skip (with the reason and the peer's exception type) if a
    known limitation makes it fail, and let any other failure fail the test."""
    if reason is None:
        return action()
    try:
        return action()
    except Exception as err:  # noqa: BLE001 - peers raise many types; the reason is known
        # Only the exception type: peer messages carry temporary paths, and stable
        # reasons group in pytest's skip summary.
        pytest.skip(f"{reason} (peer raised {type(err).__name__})")


# --------------------------------------------------------------------------- chunkflow


def write_chunkflow(case: Case, path: Path, data: np.ndarray) -> None:
    kwargs: dict[str, Any] = dict(
        chunks=case.chunks, dtype=str if case.dtype == VLEN else case_dtype(case),
        fill_value=fill_scalar(case), order=case.order, zarr_format=case.zarr_format,
        store=str(path), attributes=case.attributes or None,
    )
    if case.no_compressor:
        kwargs["compressor"] = None
    if case.zarr_format == 2:
        if case.compressor is not None:
            kwargs["compressor"] = numcodecs.get_codec(dict(case.compressor))
        if case.filters:
            kwargs["filters"] = [numcodecs.get_codec(dict(f)) for f in case.filters]
        kwargs["dimension_separator"] = case.separator
    else:
        if case.codecs is not None:
            kwargs["codecs"] = [dict(c) for c in case.codecs]
        if case.key_encoding is not None:
            kwargs["chunk_key_encoding"] = {"name": case.key_encoding,
                                            "configuration": {"separator": case.separator}}
        kwargs["dimension_names"] = case.dimension_names
    z = chunkflow.create(case.shape, **kwargs)
    region = region_of(case)
    z[region] = data[region]


def read_chunkflow(case: Case, path: Path) -> Observed:
    z = chunkflow.open(str(path), mode="r")
    names = z.dimension_names if case.zarr_format == 3 else None
    return Observed(np.asarray(z[...]), dict(z.attrs), names)


# --------------------------------------------------------------------------- zarr-python


def _zarr_codec(doc: dict[str, Any]) -> Any:
    """A zarr-python codec object from its ``zarr.json`` document."""
    return zarr.registry.get_codec_class(doc["name"]).from_dict(dict(doc))


def _zarr_v3_pipeline(case: Case) -> dict[str, Any]:
    """``filters`` / ``serializer`` / ``compressors`` arguments of ``zarr.create_array``."""
    ndim = len(case.shape)
    transpose = [zarr.codecs.TransposeCodec(order=tuple(range(ndim - 1, -1, -1)))]
    if case.codecs is None:
        return {
            # zarr-python's order= only sets the in-memory layout; on disk "F" is a transpose.
            "filters": transpose if case.order == "F" and ndim > 1 else None,
            "compressors": None if case.no_compressor else "auto",
        }
    filters, serializer, compressors = [], "auto", []
    for doc in case.codecs:
        codec = _zarr_codec(doc)
        if isinstance(codec, zarr.abc.codec.ArrayArrayCodec):
            filters.append(codec)
        elif isinstance(codec, zarr.abc.codec.ArrayBytesCodec):
            serializer = codec
        else:
            compressors.append(codec)
    return {"filters": filters or None, "serializer": serializer,
            "compressors": compressors or None}


def write_zarr(case: Case, path: Path, data: np.ndarray) -> None:
    kwargs: dict[str, Any] = dict(
        store=str(path), shape=case.shape, chunks=case.chunks,
        dtype=str if case.dtype == VLEN else case_dtype(case),
        fill_value=fill_scalar(case), zarr_format=case.zarr_format,
        attributes=case.attributes or None,
    )
    if case.zarr_format == 2:
        kwargs["order"] = case.order
        if case.no_compressor:
            kwargs["compressors"] = None
        elif case.compressor is not None:
            kwargs["compressors"] = numcodecs.get_codec(dict(case.compressor))
        if case.filters:
            kwargs["filters"] = [numcodecs.get_codec(dict(f)) for f in case.filters]
        kwargs["chunk_key_encoding"] = {"name": "v2", "separator": case.separator or "."}
    else:
        kwargs.update(_zarr_v3_pipeline(case))
        if case.key_encoding is not None:
            kwargs["chunk_key_encoding"] = {"name": case.key_encoding,
                                            "separator": case.separator}
        kwargs["dimension_names"] = case.dimension_names
    a = zarr.create_array(**kwargs)
    region = region_of(case)
    a[region] = data[region]


def read_zarr(case: Case, path: Path) -> Observed:
    a = zarr.open_array(str(path), mode="r")
    names = (tuple(a.metadata.dimension_names or ()) or None) if case.zarr_format == 3 else None
    return Observed(np.asarray(a[...]), a.attrs.asdict(), names)


# --------------------------------------------------------------------------- tensorstore


def _float_json(x: float) -> float | str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def _fill_json(value: Any, dtype: np.dtype) -> Any:
    """The JSON fill value tensorstore expects (FORMAT.md's encodings)."""
    if value is None:
        return None
    kind = dtype.kind
    if kind == "b":
        return bool(value)
    if kind in "iu":
        return int(value)
    if kind == "f":
        return _float_json(float(value))
    if kind == "c":
        return [_float_json(float(value.real)), _float_json(float(value.imag))]
    # Bytes and structured: Base64 of the whole item (tensorstore refuses short ones).
    return base64.b64encode(np.asarray(value, dtype).tobytes()).decode()


def _v2_dtype_json(dtype: np.dtype) -> Any:
    if dtype.fields is None:
        return dtype.str
    return [[name, dtype.fields[name][0].str] for name in dtype.names or ()]


def _ts_metadata(case: Case) -> dict[str, Any]:
    dtype = case_dtype(case)
    ndim = len(case.shape)
    meta: dict[str, Any] = {"shape": list(case.shape)}
    if case.zarr_format == 2:
        meta.update(chunks=list(case.chunks), dtype=_v2_dtype_json(dtype), order=case.order,
                    fill_value=_fill_json(fill_scalar(case), dtype), filters=None)
        if case.no_compressor:
            meta["compressor"] = None
        elif case.compressor is not None:
            meta["compressor"] = dict(case.compressor)
        if case.separator is not None:
            meta["dimension_separator"] = case.separator
        return meta
    meta.update(
        chunk_grid={"name": "regular", "configuration": {"chunk_shape": list(case.chunks)}},
        data_type=dtype.name, fill_value=_fill_json(fill_scalar(case), dtype),
    )
    if dtype.fields is not None:
        # tensorstore's v3 structured type: zarr-extensions' "struct", fields as objects.
        names = dtype.names or ()
        meta["data_type"] = {"name": "struct", "configuration": {"fields": [
            {"name": n, "data_type": dtype.fields[n][0].name} for n in names]}}
        fill = fill_scalar(case)
        meta["fill_value"] = {n: _fill_json(fill[n], dtype.fields[n][0]) for n in names}
    if case.codecs is not None:
        meta["codecs"] = [dict(c) for c in case.codecs]
    elif case.order == "F" and ndim > 1:
        meta["codecs"] = [{"name": "transpose",
                           "configuration": {"order": list(range(ndim - 1, -1, -1))}},
                          {"name": "bytes", "configuration": {"endian": "little"}}]
    elif case.no_compressor:
        meta["codecs"] = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if case.key_encoding is not None:
        meta["chunk_key_encoding"] = {"name": case.key_encoding,
                                      "configuration": {"separator": case.separator}}
    if case.dimension_names is not None:
        meta["dimension_names"] = list(case.dimension_names)
    if case.attributes:
        meta["attributes"] = case.attributes
    return meta


def _ts_spec(case: Case, path: Path, field: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "driver": "zarr" if case.zarr_format == 2 else "zarr3",
        "kvstore": {"driver": "file", "path": str(path)},
    }
    if field is not None:
        spec["field"] = field  # tensorstore opens one field of a structured array at a time
    return spec


def _to_ts(values: np.ndarray) -> np.ndarray:
    """tensorstore shows ``|Sn`` as an extra trailing dimension of n chars."""
    if values.dtype.kind != "S":
        return values
    n = values.dtype.itemsize
    return values.reshape(-1).view("S1").reshape(values.shape + (n,))


def _from_ts(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if dtype.kind != "S":
        return values
    if values.dtype.itemsize == 0:
        # tensorstore 0.1.86 converts 'char' to NumPy as |S0: the bytes are lost.
        raise TypeError(f"tensorstore returned {values.dtype} items for {dtype}")
    return np.ascontiguousarray(values).view(dtype).reshape(values.shape[:-1])


def write_tensorstore(case: Case, path: Path, data: np.ndarray) -> None:
    dtype = case_dtype(case)
    region = region_of(case)
    fields: list[str | None] = list(dtype.names) if dtype.fields is not None else [None]
    for i, name in enumerate(fields):
        spec = _ts_spec(case, path, name)
        if i == 0:
            spec.update(metadata=_ts_metadata(case), create=True)
        else:
            spec["open"] = True
        store = ts.open(spec).result()
        part = data if name is None else data[name]
        # np.array, not np.ascontiguousarray: the latter turns a 0-d array into 1-d.
        store[region].write(_to_ts(np.array(part[region], order="C"))).result()


def read_tensorstore(case: Case, path: Path) -> Observed:
    dtype = case_dtype(case)
    if dtype.fields is None:
        store = ts.open(_ts_spec(case, path, None)).result()
        values = _from_ts(store.read().result(), dtype)
    else:
        values = np.empty(case.shape, dtype)
        for name in dtype.names or ():
            store = ts.open(_ts_spec(case, path, name)).result()
            values[name] = _from_ts(store.read().result(), dtype.fields[name][0])
    if case.zarr_format == 2:  # the zarr driver neither reads nor writes .zattrs
        return Observed(values, None, None)
    metadata = store.spec().to_json()["metadata"]
    names = tuple(label or None for label in store.domain.labels)
    return Observed(values, metadata.get("attributes", {}), names)


WRITERS: dict[str, Callable[[Case, Path, np.ndarray], None]] = {
    "zarr": write_zarr, "tensorstore": write_tensorstore,
}
READERS: dict[str, Callable[[Case, Path], Observed]] = {
    "zarr": read_zarr, "tensorstore": read_tensorstore,
}


def write_peer(peer: str, case: Case, path: Path, data: np.ndarray, self_check: bool) -> None:
    """Write with ``peer``; with ``self_check``, also read back with ``peer`` itself, so
    that a peer whose own round trip loses data is caught as the peer's fault."""
    WRITERS[peer](case, path, data)
    if self_check:
        assert_same_values(READERS[peer](case, path).values, expected_values(case, data),
                           f"{peer} -> {peer}")


# --------------------------------------------------------------------------- checks


def assert_same_values(actual: np.ndarray, expected: np.ndarray, where: str) -> None:
    """Equal shape, equal dtype up to byte order, equal values (NaN == NaN, NaT == NaT)."""
    assert actual.shape == expected.shape, f"{where}: shape {actual.shape} != {expected.shape}"
    if expected.dtype.kind == "O":
        # Variable-length strings: peers return object or NumPy StringDType arrays.
        assert actual.dtype.kind in "OT", f"{where}: dtype {actual.dtype} for vlen strings"
        got = actual.ravel().tolist()
        assert all(isinstance(x, str) for x in got), f"{where}: non-str items in {got!r}"
        assert got == expected.ravel().tolist(), f"{where}: strings differ"
        return
    assert actual.dtype.newbyteorder("=") == expected.dtype.newbyteorder("="), (
        f"{where}: dtype {actual.dtype} != {expected.dtype}"
    )
    if expected.dtype.fields is not None:
        for name in expected.dtype.names or ():
            assert_same_values(actual[name], expected[name], f"{where}, field {name!r}")
        return
    kind = expected.dtype.kind
    if kind in "Mm":
        # NaT compares unequal to itself; the int64 payload is what is stored.
        np.testing.assert_array_equal(actual.view("i8"), expected.view("i8"), err_msg=where)
    elif kind == "c":
        # Compare parts separately: a NaN in one part must not hide the other part.
        np.testing.assert_array_equal(actual.real, expected.real, err_msg=f"{where} (real)")
        np.testing.assert_array_equal(actual.imag, expected.imag, err_msg=f"{where} (imag)")
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=where)  # NaN-aware


def written_attributes(case: Case, writer: str) -> dict[str, Any]:
    """The attributes ``writer`` stores: tensorstore's v2 driver never writes .zattrs."""
    if writer == "tensorstore" and case.zarr_format == 2:
        return {}
    return case.attributes


def check_observed(case: Case, observed: Observed, data: np.ndarray, writer: str,
                   reader: str) -> None:
    where = f"{writer} -> {reader}"
    assert_same_values(observed.values, expected_values(case, data), where)
    if observed.attributes is not None:
        assert observed.attributes == written_attributes(case, writer), (
            f"{where}: attributes {observed.attributes} differ"
        )
    if case.zarr_format == 3 and observed.dimension_names is not None:
        expected_names = case.dimension_names or (None,) * len(case.shape)
        got = tuple(observed.dimension_names) or (None,) * len(case.shape)
        assert got == tuple(expected_names), f"{where}: dimension_names {got}"


def check_chunk_keys(case: Case, path: Path, writer: str) -> None:
    """The first chunk sits under the key the encoding prescribes; for chunkflow, the
    all-fill last chunk is not stored (its documented write_empty_chunks=False policy)."""
    if 0 in case.shape:
        return
    first = chunk_key(case, (0,) * len(case.shape))
    assert (path / first).is_file(), (
        f"{writer} wrote no chunk {first!r}; found {sorted(p.name for p in path.rglob('*'))}"
    )
    if writer == "chunkflow" and chunk_count(case) > 1:
        last = tuple(-(-n // c) - 1 for n, c in zip(case.shape, case.chunks, strict=True))
        assert not (path / chunk_key(case, last)).exists(), (
            f"chunkflow stored the all-fill chunk {chunk_key(case, last)!r}"
        )


def _metadata_doc(case: Case, path: Path) -> dict[str, Any]:
    name = ".zarray" if case.zarr_format == 2 else "zarr.json"
    return json.loads((path / name).read_text())


# --------------------------------------------------------------------------- tests

#: (direction, peer, case id) -> reason, for chunkflow bugs too large to fix here (none now).
XFAILS: dict[tuple[str, str, str], str] = {}


def _params(direction: str) -> list[Any]:
    params = []
    for case in CASES:
        for peer in PEERS:
            reason = XFAILS.get((direction, peer, case.id))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            params.append(pytest.param(case, peer, id=f"{case.id}-{peer}", marks=marks))
    return params


@pytest.mark.parametrize(("case", "peer"), _params("chunkflow-to-peer"))
def test_chunkflow_writes_peer_reads(case: Case, peer: str, tmp_path: Path) -> None:
    path = tmp_path / "array.zarr"
    data = make_data(case)
    write_chunkflow(case, path, data)
    check_chunk_keys(case, path, "chunkflow")
    assert _metadata_doc(case, path)["zarr_format"] == case.zarr_format
    observed = attempt(peer_limitation(peer, case, "read"), lambda: READERS[peer](case, path))
    check_observed(case, observed, data, "chunkflow", peer)


@pytest.mark.parametrize(("case", "peer"), _params("peer-to-chunkflow"))
def test_peer_writes_chunkflow_reads(case: Case, peer: str, tmp_path: Path) -> None:
    path = tmp_path / "array.zarr"
    data = make_data(case)
    reason = peer_limitation(peer, case, "write")
    attempt(reason, lambda: write_peer(peer, case, path, data, self_check=reason is not None))
    check_chunk_keys(case, path, peer)
    observed = read_chunkflow(case, path)
    check_observed(case, observed, data, peer, "chunkflow")
