"""label and measure against the fastest in-memory tools: cc3d
(``connected-components-3d``) and scipy for labels, ``skimage.measure.regionprops_table``
and ``cc3d.statistics`` for tables (issue 36's "Speed" bullets).

Run by hand (not part of the test suite), through ``benchmarks/bench_labels.py``
(``--peers`` only these, ``--no-peers`` without them) or alone::

    python benchmarks/bench_labels_peers.py [--repeat 3] [--quick] [--keep FOLDER]

The images are bench_labels.py's smooth fields (about 10^5 objects at full size).
Each run is a fresh process, timed and measured (peak resident memory above the
interpreter once the libraries are imported):

- label, 8192^2 8-connected and 512^3 26-connected (``--quick``: 2048^2, 128^3), of
  the field thresholded and stored once as a bool array (512^2 and 128^3 chunks; not
  timed): ``chunkflow`` (``chunkflow.label(mask_path, out_path)``, store to store,
  every default: threads, blocks, codec; cc3d per 3-D block where installed),
  ``chunkflow-scipy`` (the same, scipy per block), ``cc3d``
  (``cc3d.connected_components(mask)``) and ``scipy`` (``ndimage.label(mask)``), the
  mask read into memory before the clock for the last two; and chunkflow's floor, its
  parts measured alone: ``floor-read`` (the mask read whole from the store),
  ``floor-label-blocks`` (each block chunkflow plans labelled, in memory, by the
  labeller chunkflow picks, on as many threads as the machine has: scipy in 2-D, which
  releases the GIL; cc3d in 3-D, which holds it, so its blocks do not overlap) and ``floor-write``
  (cc3d's labels written as a new uint32 array, the default codec). The ratio to the
  floor is chunkflow's time over the sum of the three;
- regionprops on the 2-D labels (stored once by chunkflow.label), one property at a
  time (``area``, ``bbox``, ``centroid``, ``eccentricity``, ``perimeter``):
  ``chunkflow.measure`` from the store, ``regionprops_table`` and ``cc3d.statistics``
  (which computes counts, boxes and centroids together; it has no eccentricity or
  perimeter) on the labels in memory;
- the moment properties (``moments``, ``moments_central``, ``moments_normalized``,
  ``moments_hu``, ``inertia_tensor_eigvals``), chunkflow against ``regionprops_table``;
- ``regionprops_table(..., out="t.parquet")`` (label, area, bbox, centroid), chunkflow
  measuring and writing group by group (default row groups, and row groups of 10^4
  objects) against skimage's table written whole by pyarrow: time and peak memory.

Each child first labels and measures a tiny image (not timed): chunkflow loads some of
its modules on first use, as the peers' are loaded by their imports. Every run of a
case must agree (count of objects; the property column's sum).
Medians of ``--repeat`` runs with their ranges, and the ratios (chunkflow's time over
the peer's: below 1 is faster).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_graph import _median, _peak_rss, run_child  # noqa: E402
from bench_labels import _resident, make_image  # noqa: E402

LABELLERS = ("chunkflow", "chunkflow-scipy", "cc3d", "scipy")
FLOORS = ("floor-read", "floor-label-blocks", "floor-write")
PROPERTIES = ("area", "bbox", "centroid", "eccentricity", "perimeter")
MEASURERS = ("chunkflow", "skimage", "cc3d")
#: Moment properties, from chunkflow's first pass (merged raw moments); cc3d has none.
MOMENT_PROPERTIES = ("moments", "moments_central", "moments_normalized", "moments_hu",
                     "inertia_tensor_eigvals")
#: The table written to Parquet: chunkflow group by group (the default row groups of a
#: million objects, and of 10^4), scikit-image's table whole then pyarrow.
PARQUET_WRITERS = ("chunkflow", "chunkflow-10k", "skimage")
PARQUET_PROPERTIES = ["label", "area", "bbox", "centroid"]


def _structure(ndim: int) -> np.ndarray:
    return np.ones((3,) * ndim, bool)  # 8-connected in 2-D, 26-connected in 3-D


def _planned_blocks(z: Any) -> list[tuple[slice, ...]]:
    """The blocks chunkflow.label plans for ``z`` by default (its first pass's tasks)."""
    from chunkflow.api.zarr3 import create_array
    from chunkflow.graph.labels.plan import label_voxel_bytes, plan_blocks

    template = create_array(None, shape=z.shape, chunks=z.write_chunks, dtype="u4")
    reads = [(z.dtype.itemsize, z.write_chunks), (4, template.write_chunks)]
    block = plan_blocks(template, label_voxel_bytes(z.dtype.itemsize, 4), reads, None, None, None)
    return [tuple(slice(i * b, min(n, (i + 1) * b)) for i, b, n in zip(index, block, z.shape))
            for index in np.ndindex(*(-(-n // b) for n, b in zip(z.shape, block)))]


def _floor_child(kind: str, mask: str, out: str) -> dict[str, Any]:
    """One part of chunkflow.label's work alone: ``read`` (the mask, whole, from the
    store), ``label-blocks`` (each planned block labelled in memory as chunkflow labels
    it, on every thread) or ``write`` (cc3d's labels, in memory, written as a new
    uint32 array with chunkflow's default codec, the source's chunks)."""
    import cc3d

    import chunkflow
    from chunkflow.graph.labels.local import cc3d_connectivity, local_labels

    z = chunkflow.open_array(mask, mode="r")
    structure = _structure(z.ndim)
    if kind == "read":
        start = time.perf_counter()
        data = z[...]
        return {"count": int(data.sum()), "start": start}
    data = z[...]
    if kind == "label-blocks":
        from concurrent.futures import ThreadPoolExecutor

        connectivity = cc3d_connectivity(structure)
        blocks = _planned_blocks(z)
        start = time.perf_counter()
        with ThreadPoolExecutor(os.cpu_count()) as pool:
            count = sum(pool.map(lambda block: local_labels(data[block], structure,
                                                            connectivity)[1], blocks))
        return {"count": count, "start": start, "blocks": len(blocks)}
    labels, count = cc3d.connected_components(data, connectivity=8 if z.ndim == 2 else 26,
                                              return_N=True, out_dtype=np.uint32)
    start = time.perf_counter()
    written = chunkflow.create(z.shape, chunks=z.write_chunks, dtype="u4", store=out,
                               zarr_format=3)
    written[...] = labels
    return {"count": int(count), "start": start}


def _label_child(kind: str, mask: str, out: str) -> dict[str, Any]:
    """``chunkflow`` labels the stored mask into a new array at ``out`` (store to store,
    every default: scheduler, blocks, codec); the peers label it in memory (read before
    the clock); ``floor-*``: see :func:`_floor_child`."""
    import zarr

    import chunkflow
    from chunkflow.graph.labels.local import scipy_only

    if kind.startswith("floor-"):
        return _floor_child(kind[len("floor-"):], mask, out)
    if kind.startswith("chunkflow"):
        ndim = len(chunkflow.open_array(mask, mode="r").shape)
        start = time.perf_counter()
        with scipy_only() if kind == "chunkflow-scipy" else contextlib.nullcontext():
            _, count = chunkflow.label(mask, out, structure=_structure(ndim))
        return {"count": int(count), "start": start}
    data = zarr.open_array(mask, mode="r")[...]  # in memory before the clock starts
    start = time.perf_counter()
    if kind == "cc3d":
        import cc3d

        _, count = cc3d.connected_components(data, return_N=True,
                                             connectivity=8 if data.ndim == 2 else 26)
    else:
        from scipy import ndimage

        _, count = ndimage.label(data, _structure(data.ndim))
    return {"count": int(count), "start": start}


def _column_sum(table: dict[str, Any], prop: str) -> float:
    return float(sum(np.nansum(np.asarray(v, np.float64)) for k, v in table.items()
                     if k == prop or k.startswith(f"{prop}-")))


def _measure_child(kind: str, labels: str, prop: str) -> dict[str, Any]:
    import zarr

    import chunkflow

    if kind == "chunkflow":
        z = chunkflow.open_array(labels, mode="r")
        start = time.perf_counter()
        table = chunkflow.measure(z, properties=["label", prop], scheduler="threads")
        return {"count": len(table["label"]), "sum": _column_sum(table, prop), "start": start}
    data = zarr.open_array(labels, mode="r")[...]
    start = time.perf_counter()
    if kind == "skimage":
        from skimage.measure import regionprops_table

        table = regionprops_table(data, properties=["label", prop])
        return {"count": len(table["label"]), "sum": _column_sum(table, prop), "start": start}
    import cc3d

    if prop in ("eccentricity", "perimeter"):
        return {"count": -1, "sum": float("nan"), "start": start, "missing": True}
    stats = cc3d.statistics(data)
    counts = stats["voxel_counts"][1:]
    found = {"area": counts, "centroid": stats["centroids"][1:],
             "bbox": [(s.start, s.stop) for box in stats["bounding_boxes"][1:] for s in box]}
    present = counts > 0
    value = np.asarray(found[prop], np.float64)
    total = float(np.nansum(value[present] if prop != "bbox" else value))
    return {"count": int(present.sum()), "sum": total, "start": start}


def _parquet_child(kind: str, labels: str, out: str) -> dict[str, Any]:
    import pyarrow.parquet as pq
    import zarr

    import chunkflow
    from chunkflow.skimage import measure

    if kind.startswith("chunkflow"):
        z = chunkflow.open_array(labels, mode="r")
        start = time.perf_counter()
        groups = {"row_group_size": 10_000} if kind == "chunkflow-10k" else {}
        measure.regionprops_table(z, properties=PARQUET_PROPERTIES, out=out,
                                  scheduler="threads", **groups)
    else:
        from skimage.measure import regionprops_table

        data = zarr.open_array(labels, mode="r")[...]
        start = time.perf_counter()
        table = regionprops_table(data, properties=PARQUET_PROPERTIES)
        pq.write_table(__import__("pyarrow").table(table), out)
    written = pq.read_table(out)
    return {"count": written.num_rows, "sum": float(np.sum(written["area"].to_numpy())),
            "start": start, "groups": pq.ParquetFile(out).num_row_groups}


def _warm_up() -> None:
    """One tiny label and measure, so that the modules chunkflow loads on first use
    are loaded before the clock, as the peers' code is (the first call in a fresh
    process costs about 0.7 s more on this machine)."""
    import chunkflow

    for ndim in (2, 3):
        tiny = np.zeros((8,) * ndim, bool)
        tiny[(2,) * ndim] = tiny[(3,) * ndim] = tiny[(4,) * ndim] = True
        # Two blocks per axis, so that the merge's modules (scipy.sparse) load too.
        labels, _ = chunkflow.label(chunkflow.array(tiny, chunks=(4,) * ndim),
                                    chunkflow.MemoryStore(), structure=_structure(ndim),
                                    blocks=(1,) * ndim)
        chunkflow.measure(labels, properties=["label", "area", "bbox", "centroid",
                                              "eccentricity" if ndim == 2 else "area",
                                              "perimeter" if ndim == 2 else "area"])


def child(what: str, kind: str, *args: str) -> None:
    import dask  # noqa: F401 - every library imported before the baseline
    import scipy.ndimage  # noqa: F401
    import skimage.measure  # noqa: F401
    import zarr  # noqa: F401

    import chunkflow.graph  # noqa: F401

    for optional in ("cc3d", "distributed"):  # dask's compute imports distributed if there
        try:
            __import__(optional)
        except ImportError:
            pass
    _warm_up()
    baseline = _resident()
    if what == "label":
        result = _label_child(kind, args[0], args[1])
        shutil.rmtree(args[1], ignore_errors=True)
    elif what == "parquet":
        result = _parquet_child(kind, args[0], args[1])
        Path(args[1]).unlink(missing_ok=True)
    else:
        result = _measure_child(kind, args[0], args[1])
    seconds = time.perf_counter() - result.pop("start")
    print(json.dumps({**result, "seconds": seconds, "rss": _peak_rss() - baseline}))


def _runs(repeat: int, *args: str) -> list[dict[str, Any]]:
    return [run_child(__file__, *args) for _ in range(repeat)]


def _line(kind: str, runs: list[dict[str, Any]]) -> str:
    if runs[0].get("missing"):
        return f"   {kind:16s} (no such property)"
    return (f"   {kind:16s} {_median([r['seconds'] for r in runs])} s   peak RSS "
            f"{_median([r['rss'] / 2**20 for r in runs])} MiB")


def _ratio(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> str:
    if theirs[0].get("missing"):
        return "n/a"
    mine = statistics.median(r["seconds"] for r in ours)
    other = statistics.median(r["seconds"] for r in theirs)
    return f"{mine / other:.2f}x"


def _mask(folder: Path, shape: tuple[int, ...], chunks: tuple[int, ...]) -> Path:
    """The thresholded field stored as a bool array (the labels' input), made once."""
    import chunkflow

    name = "x".join(map(str, shape))
    image = folder / f"image-{name}.zarr"
    threshold = make_image(image, shape, chunks)
    mask = folder / f"mask-{name}.zarr"
    if not mask.exists():
        z = chunkflow.open_array(str(image), mode="r")
        chunkflow.map_chunks(lambda block: block > threshold, z, out=str(mask), dtype=bool)
    return mask


def bench_label(folder: Path, shape: tuple[int, ...], chunks: tuple[int, ...],
                repeat: int) -> None:
    name = "x".join(map(str, shape))
    mask = _mask(folder, shape, chunks)
    conn = "8" if len(shape) == 2 else "26"
    print(f"label {name} ({conn}-connected) of a stored bool mask ({chunks} chunks): chunkflow "
          "from the store to a new array in the store (every default), the peers in memory "
          "(reading the mask not timed); floor-*: chunkflow's parts alone (time, peak RSS "
          "above the interpreter)", flush=True)
    kinds = LABELLERS + FLOORS
    results: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
    for _ in range(repeat):  # interleaved: the machine's load changes along the run
        for kind in kinds:
            results[kind].append(run_child(__file__, "label", kind, str(mask),
                                           str(folder / f"{kind}.zarr")))
    for kind, runs in results.items():
        extra = f"  {runs[0]['blocks']} blocks" if "blocks" in runs[0] else ""
        print(_line(kind, runs), f"  {runs[0]['count']} objects{extra}" if not
              kind.startswith("floor-") else extra, flush=True)
    counts = {r["count"] for kind in LABELLERS + ("floor-write",) for r in results[kind]}
    print(f"   every run found the same number of objects: {len(counts) == 1}")
    ours = results["chunkflow"]
    floor = statistics.median(sum(results[kind][i]["seconds"] for kind in FLOORS)
                              for i in range(repeat))
    mine = statistics.median(r["seconds"] for r in ours)
    print("   chunkflow's time over: " + ", ".join(
        f"{kind} {_ratio(ours, results[kind])}" for kind in LABELLERS[1:])
        + f", the floor (read + label blocks + write, {floor:.3f} s) {mine / floor:.2f}x")


def bench_props(folder: Path, shape: tuple[int, ...], chunks: tuple[int, ...],
                repeat: int, properties: tuple[str, ...] = PROPERTIES) -> None:
    import chunkflow

    name = "x".join(map(str, shape))
    image = folder / f"image-{name}.zarr"
    threshold = make_image(image, shape, chunks)
    labels = folder / f"labels-{name}.zarr"
    if not labels.exists():
        z = chunkflow.open_array(str(image), mode="r")
        chunkflow.label(chunkflow.to_dask(z) > threshold, str(labels))
    print(f"regionprops of the labels of {name} (4-connected), one property at a time: "
          "chunkflow.measure from the store on threads, the peers in memory", flush=True)
    for prop in properties:
        results = {kind: _runs(repeat, "measure", kind, str(labels), prop) for kind in MEASURERS}
        print(f"  {prop}")
        for kind, runs in results.items():
            print(_line(kind, runs), flush=True)
        found = {(r["count"], round(r["sum"], 3)) for runs in results.values() for r in runs
                 if not r.get("missing")}
        ours = results["chunkflow"]
        print(f"   same objects and column sums: {len(found) == 1}   chunkflow's time over: "
              f"skimage {_ratio(ours, results['skimage'])}, cc3d {_ratio(ours, results['cc3d'])}")


def _stored_labels(folder: Path, shape: tuple[int, ...], chunks: tuple[int, ...]) -> Path:
    import chunkflow

    name = "x".join(map(str, shape))
    image = folder / f"image-{name}.zarr"
    threshold = make_image(image, shape, chunks)
    labels = folder / f"labels-{name}.zarr"
    if not labels.exists():
        z = chunkflow.open_array(str(image), mode="r")
        chunkflow.label(chunkflow.to_dask(z) > threshold, str(labels))
    return labels


def _agree(runs: list[dict[str, Any]]) -> bool:
    """Every run found the same objects and column sums (to 9 significant digits:
    moment sums are large and rounded differently)."""
    found = {(r["count"], f"{r['sum']:.9g}") for r in runs if not r.get("missing")}
    return len(found) == 1


def bench_moments(folder: Path, shape: tuple[int, ...], chunks: tuple[int, ...],
                  repeat: int) -> None:
    labels = _stored_labels(folder, shape, chunks)
    print(f"moment properties of the labels of {'x'.join(map(str, shape))}, one at a time: "
          "chunkflow.measure from the store on threads (first pass, merged raw "
          "moments), regionprops_table in memory (cc3d has none)", flush=True)
    for prop in MOMENT_PROPERTIES:
        results = {kind: _runs(repeat, "measure", kind, str(labels), prop)
                   for kind in MEASURERS[:2]}
        print(f"  {prop}")
        for kind, runs in results.items():
            print(_line(kind, runs), flush=True)
        runs = [r for kind_runs in results.values() for r in kind_runs]
        print(f"   same objects and column sums: {_agree(runs)}   chunkflow's time over: "
              f"skimage {_ratio(results['chunkflow'], results['skimage'])}")


def bench_parquet(folder: Path, shape: tuple[int, ...], chunks: tuple[int, ...],
                  repeat: int) -> None:
    labels = _stored_labels(folder, shape, chunks)
    print(f"regionprops_table({', '.join(PARQUET_PROPERTIES)}) of the labels of "
          f"{'x'.join(map(str, shape))} written to Parquet: chunkflow group by group from "
          "the store (default row groups; of 10^4 objects), skimage's table in memory "
          "then pyarrow", flush=True)
    results = {kind: _runs(repeat, "parquet", kind, str(labels), str(folder / "t.parquet"))
               for kind in PARQUET_WRITERS}
    for kind, runs in results.items():
        print(_line(kind, runs), f"  {runs[0]['count']} rows in {runs[0]['groups']} row groups",
              flush=True)
    runs = [r for kind_runs in results.values() for r in kind_runs]
    print(f"   same rows and areas: {_agree(runs)}   chunkflow's time over skimage: "
          f"{_ratio(results['chunkflow'], results['skimage'])} (row groups of 10^4: "
          f"{_ratio(results['chunkflow-10k'], results['skimage'])})")


def run(folder: Path, quick: bool, repeat: int) -> None:
    plane = (2048, 2048) if quick else (8192, 8192)
    side = 128 if quick else 512
    bench_label(folder, plane, (512, 512), repeat)
    bench_label(folder, (side,) * 3, (side // 4,) * 3, repeat)
    bench_props(folder, plane, (512, 512), repeat)
    bench_moments(folder, plane, (512, 512), repeat)
    bench_parquet(folder, plane, (512, 512), repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2048^2 and 128^3")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--keep", type=Path, help="reuse this folder for the data")
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    folder = args.keep or Path(tempfile.mkdtemp(prefix="chunkflow-bench-peers-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        run(folder, args.quick, args.repeat)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
