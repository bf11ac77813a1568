"""Object storage with per-request latency: chunkflow vs zarr-python 3 vs tensorstore.

Local folders hide what matters on object stores, where every request costs 10-100 ms:
there, speed comes from how many requests are in flight at once and how many are made.
This benchmark starts its own servers on 127.0.0.1, each in a child process (so that
serving costs the readers no GIL), each adding a fixed delay (``--delay``, 20 ms) before
every response and counting the requests it answers:

- ``http``: a threaded HTTP server over a folder (Range requests, ETag and
  Last-Modified headers, a listen backlog of 1024), read through fsspec's HTTP file
  system by chunkflow and zarr-python 3 and through tensorstore's ``http`` kvstore;
- ``s3``: a moto S3 server behind :class:`chunkflow.testing.FaultProxy`, which sleeps
  before forwarding each request (``s3fs`` for chunkflow and zarr-python 3,
  tensorstore's ``s3`` kvstore).

Workloads, each timed ``--repeat`` times (median [range]) with the requests the server
saw in the last run and the CPU time the client and the server used per run (medians).
Client and
server share the machine's cores, so no reader can be faster than their summed CPU
time over the cores: the floor printed beside each case.

- a full read of a uint16 array in 512^2 chunks (256 MiB; ``--quick``: 32 MiB), by
  tensorstore (the speeds are relative to it), by chunkflow as ``z[:]``, through a
  default handle and as ``to_dask(z).compute()`` with default blocks, and by
  zarr-python 3 as ``z[:]``, the readers taking turns run by run; with the floor of
  the read measured in the same turns: the requests alone (chunkflow's window, no
  decoding) and the decoding alone (the same array in memory), floor = max(the
  requests' wall time, (client + server CPU) / cores);
- the same array as an xarray dataset (Zarr v2, consolidated), loaded with
  ``xr.open_dataset(url, engine=..., chunks=...)`` by chunkflow's engine and by
  xarray's zarr engine, with ``chunks={}`` and ``chunks="auto"``;
- random 256^2 windows (``--windows``) of a sharded array (4096^2 shards of 256^2 inner
  chunks; ``--quick``: 1024^2 shards), one after another from a handle opened once;
- over S3 only: a full write of the first array, and a ``map_chunks`` job (a 3x3
  mean filter, array to array) beside dask ``map_overlap`` + ``to_zarr`` with
  zarr-python 3;
- over S3 only, the client backends: the full read and the full write of the first
  array by chunkflow through obstore (``chunkflow.io.object-backend: obstore``),
  through s3fs (``fsspec``) and through zarr-python's ``ObjectStore(S3Store)``, and by
  zarr-python 3 over that ``ObjectStore``, with the client's CPU seconds per GiB moved,
  the part of it above decoding (encoding) the same chunks in memory, which every
  backend spends alike, and both as ratios to chunkflow's s3fs backend. moto serves
  every request in Python, so the server's CPU, not the client's, bounds the wall time
  here.

Run by hand, with nothing else running::

    python benchmarks/bench_object_storage.py [--quick] [--repeat N] [--delay 0.02]
    python benchmarks/bench_object_storage.py --only s3 --workloads backends
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve()
WINDOW = 256
#: Seconds of each run, requests in the last, and (client, server) CPU seconds per run.
Timing = tuple[list[float], int, tuple[float, float]]
BUCKET = "bench"
COUNTS = "/__counts__"


# ------------------------------------------------------------------ servers (child)

def _delayed_http_server(root: str, delay: float) -> Any:
    """A threaded HTTP server over ``root`` that sleeps ``delay`` s per request."""
    import email.utils
    import threading
    from collections import Counter
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    counts: Counter[str] = Counter()
    lock = threading.Lock()

    class Handler(SimpleHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real servers

        def log_message(self, *args: Any) -> None:
            pass

        def do_HEAD(self) -> None:
            self._serve(head=True)

        def do_GET(self) -> None:
            if self.path == COUNTS:
                with lock:
                    counts["GET"] += 1  # counted, as the S3 proxy counts it
                body = json.dumps(dict(counts)).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            self._serve(head=False)

        def _serve(self, head: bool) -> None:
            with lock:
                counts[self.command] += 1
            time.sleep(delay)
            path = self.translate_path(self.path)
            if not os.path.isfile(path):
                self.send_error(404)
                return
            stat = os.stat(path)
            with open(path, "rb") as file:
                data = file.read()
            status, start, stop = 200, 0, len(data)
            spec = self.headers.get("Range", "")
            if spec.startswith("bytes="):
                first, _, last = spec[6:].partition("-")
                if not first:
                    start = max(0, len(data) - int(last))
                else:
                    start, stop = int(first), min(len(data), int(last) + 1 if last else len(data))
                if start >= len(data):
                    self.send_error(416)
                    return
                status = 206
            self.send_response(status)
            self.send_header("Content-Length", str(stop - start))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("ETag", f'"{stat.st_ino:x}-{stat.st_mtime_ns:x}-{stat.st_size:x}"')
            self.send_header("Last-Modified", email.utils.formatdate(stat.st_mtime, usegmt=True))
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{stop - 1}/{len(data)}")
            self.end_headers()
            if not head:
                self.wfile.write(data[start:stop])

    class Server(ThreadingHTTPServer):
        request_queue_size = 1024  # socketserver's 5 makes bursts retransmit SYNs
        daemon_threads = True

    os.chdir(root)
    return Server(("127.0.0.1", 0), Handler)


def _delayed_s3_server(delay: float) -> Any:
    """moto's S3 server behind chunkflow's FaultProxy, which sleeps ``delay`` s before
    forwarding each request (and counts them); returns the proxy's server."""
    import threading

    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import WSGIRequestHandler, make_server

    from chunkflow.testing.proxy import FaultProxy

    app = DomainDispatcherApplication(create_backend_app)
    proxy: FaultProxy

    def counted(environ: dict[str, Any], start_response: Any) -> Any:
        if environ.get("PATH_INFO") == COUNTS:  # the proxy's counts, through the proxy
            start_response("200 OK", [("Content-Type", "application/json")])
            return [json.dumps(dict(proxy.requests)).encode()]
        if os.environ.get("BENCH_LOG"):
            print(environ["REQUEST_METHOD"], environ.get("PATH_INFO"),
                  environ.get("QUERY_STRING"), environ.get("HTTP_RANGE", ""), file=sys.stderr)
        return app(environ, start_response)

    class Quiet(WSGIRequestHandler):
        def log_request(self, *args: Any) -> None:
            pass

    moto = make_server("127.0.0.1", 0, counted, threaded=True, request_handler=Quiet)
    threading.Thread(target=moto.serve_forever, daemon=True).start()
    proxy = FaultProxy(f"http://127.0.0.1:{moto.server_address[1]}", delay=delay).start()
    return proxy


def serve(kind: str, root: str, delay: float) -> None:
    """Child process: serve until stdin closes; the first line printed is the port."""
    import threading

    if kind == "http":
        server = _delayed_http_server(root, delay)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        port = server.server_address[1]
    else:
        port = int(_delayed_s3_server(delay).url.rsplit(":", 1)[1])
    print(port, flush=True)
    sys.stdin.read()


class Served:
    """A server in a child process: its URL, and the requests it has answered."""

    def __init__(self, kind: str, root: Path, delay: float) -> None:
        self.kind = kind
        self.process = subprocess.Popen(
            [sys.executable, str(HERE), "--serve", kind, "--root", str(root),
             "--delay", str(delay)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        self.url = f"http://127.0.0.1:{int(self.process.stdout.readline())}"

    def counts(self) -> dict[str, int]:
        with urllib.request.urlopen(self.url + COUNTS) as answer:
            return json.loads(answer.read())  # type: ignore[no-any-return]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.terminate()
        self.process.wait(10)


# ------------------------------------------------------------------ data and peers

def make_image(shape: tuple[int, int], seed: int = 0) -> np.ndarray:
    """A smooth image plus a little noise: compresses like microscopy data."""
    rows = np.arange(shape[0], dtype=np.float32)[:, None]
    cols = np.arange(shape[1], dtype=np.float32)[None, :]
    smooth = 2000 + 1000 * np.sin(rows / 300) * np.cos(cols / 500)
    noise = np.random.default_rng(seed).integers(0, 16, size=shape, dtype=np.uint16)
    return (smooth.astype(np.uint16) + noise).astype(np.uint16)


def s3_options(url: str) -> dict[str, Any]:
    return {"endpoint_url": url, "key": "testing", "secret": "testing",
            "client_kwargs": {"region_name": "us-west-2"}}


class Target:
    """Where the arrays are served: URLs and options for each library."""

    def __init__(self, served: Served) -> None:
        self.served = served
        self.kind = served.kind
        self.options = s3_options(served.url) if self.kind == "s3" else {}
        if self.kind == "s3":
            os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                              AWS_REGION="us-west-2")

    def url(self, name: str) -> str:
        return f"s3://{BUCKET}/{name}" if self.kind == "s3" else f"{self.served.url}/{name}"

    def chunkflow(self, name: str, **kwargs: Any) -> Any:
        import chunkflow
        return chunkflow.open_array(self.url(name), mode=kwargs.pop("mode", "r"),
                                    storage_options=self.options or None, **kwargs)

    def zarr(self, name: str, mode: str = "r") -> Any:
        import zarr
        return zarr.open_array(self.url(name), mode=mode,
                               storage_options=self.options or None)

    def tensorstore(self, name: str) -> Any:
        import tensorstore as ts
        if self.kind == "s3":
            kvstore = {"driver": "s3", "bucket": BUCKET, "path": name + "/",
                       "endpoint": self.served.url, "aws_region": "us-west-2"}
        else:
            kvstore = {"driver": "http", "base_url": self.served.url, "path": "/" + name + "/"}
        return ts.open({"driver": "zarr3", "kvstore": kvstore}, read=True).result()


def _cpu_seconds(pid: int | None = None) -> float:
    """CPU time (user + system) of this process, or of process ``pid`` (Linux)."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(func: Callable[[], object], repeat: int, served: Served) -> Timing:
    """Seconds of each run; the requests the server answered in the last one, and the
    median CPU seconds the client (this process, all its threads) and the server used
    per run (medians: other work on a shared machine inflates single runs)."""
    times, requests, clients, servers = [], 0, [], []
    for _ in range(repeat):
        before = sum(served.counts().values())
        client, server = _cpu_seconds(), _cpu_seconds(served.process.pid)
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
        clients.append(_cpu_seconds() - client)
        servers.append(_cpu_seconds(served.process.pid) - server)
        requests = sum(served.counts().values()) - before - 1  # less the count's own
    return times, requests, (statistics.median(clients), statistics.median(servers))


def _fmt(times: list[float]) -> str:
    return (f"{statistics.median(times):7.3f} s "
            f"[{min(times):.3f}-{max(times):.3f}]")


def report(title: str, results: dict[str, Timing], base: str | None = None) -> None:
    """One line per case: time, requests, CPU of client and server, and the speed
    relative to the ``base`` case (default: the first; ``1.10x`` is 10% faster). Client
    and server share the machine's cores, so no run can beat (client + server CPU) /
    cores: the floor shown."""
    print(f"  {title}")
    if not results:
        return
    base = base if base in results else next(iter(results))
    reference = statistics.median(results[base][0])
    cores = os.cpu_count() or 1
    for name, (times, requests, (client, server)) in results.items():
        speed = reference / statistics.median(times)
        print(f"    {name:<26} {_fmt(times):>28} {requests:6d} requests   "
              f"cpu {client:5.2f} + server {server:5.2f} s (floor {(client + server) / cores:5.2f} s)"
              f"   {speed:5.2f}x {base}'s speed")


def attempt(results: dict[str, Any], name: str, func: Callable[[], Any]) -> None:
    """Run one peer's measurement, reporting (not raising) what it cannot do."""
    try:
        results[name] = func()
    except Exception as err:  # a peer that cannot read this store is reported, not fatal
        print(f"    {name}: not measured ({type(err).__name__}: {str(err)[:160]})")


# ------------------------------------------------------------------ workloads

def interleaved(cases: dict[str, Callable[[], object]], repeat: int,
                served: Served) -> dict[str, Timing]:
    """:func:`timed` of every case, the cases taking turns run by run (ABCABC...), so
    that the load swings of a shared machine weigh on every case alike."""
    runs: dict[str, list[Timing]] = {name: [] for name in cases}
    for _ in range(repeat):
        for name, func in cases.items():
            runs[name].append(timed(func, 1, served))
    return {name: ([one[0][0] for one in got], got[-1][1],
                   (statistics.median(one[2][0] for one in got),
                    statistics.median(one[2][1] for one in got)))
            for name, got in runs.items()}


def full_read(target: Target, image: np.ndarray, repeat: int) -> None:
    """The full read by each reader, tensorstore first (the ratios are to it), and the
    parts of its floor (:func:`floor_parts`), all taking turns run by run."""
    import chunkflow
    z = target.chunkflow("full.zarr", cache=False)
    np.testing.assert_array_equal(z[:], image)
    cases: dict[str, Callable[[], object]] = {}

    def prepare(name: str, make: Callable[[], Callable[[], object]]) -> None:
        """Check the reader's values once; report (not raise) what it cannot do."""
        try:
            cases[name] = make()
        except Exception as err:  # a peer that cannot read this store is reported, not fatal
            print(f"    {name}: not measured ({type(err).__name__}: {str(err)[:160]})")

    def ts_case() -> Callable[[], object]:
        tarray = target.tensorstore("full.zarr")
        np.testing.assert_array_equal(tarray.read().result(), image)
        return lambda: tarray.read().result()

    def zarr_case() -> Callable[[], object]:
        zarray = target.zarr("full.zarr")
        np.testing.assert_array_equal(zarray[:], image)
        return lambda: zarray[:]

    # The default path: a handle opened with no arguments (the process-wide cache),
    # opened once like tensorstore's, read three times in a row after the cache is
    # emptied: the first read caches nothing (a scan), the second keeps a copy of each
    # chunk (its second whole read), the third is served from memory.
    handle = target.chunkflow("full.zarr")

    def first_read() -> np.ndarray:
        shared = chunkflow.cache.default_cache()
        if shared is not None:
            shared.clear()
        return handle[:]

    x = chunkflow.to_dask(z)
    np.testing.assert_array_equal(x.compute(), image)
    prepare("tensorstore", ts_case)
    prepare("chunkflow z[:]", lambda: lambda: z[:])
    prepare("chunkflow, default handle", lambda: first_read)
    prepare("  read again (caches)", lambda: lambda: handle[:])
    prepare("  a third time (cached)", lambda: lambda: handle[:])
    prepare(f"chunkflow to_dask {x.numblocks}", lambda: x.compute)
    prepare("zarr-python 3 z[:]", zarr_case)
    readers = list(cases)
    parts = floor_parts(z, image, x)
    results = interleaved({**cases, **parts}, repeat, target.served)
    report(f"full read, {image.shape} uint16 in 512^2 chunks ({image.nbytes / 2**20:.0f} MiB)",
           {name: results[name] for name in readers}, base="tensorstore")
    report_floor({name: results[name] for name in readers},
                 {name: results[name] for name in parts})


def floor_parts(z: Any, image: np.ndarray, remote: Any) -> dict[str, Callable[[], object]]:
    """What no reader of this array can beat on this machine, measured in parts:

    - ``fetch alone``: every chunk's GET, chunkflow's in-flight window at once (its
      store's stream, no decoding): the requests' wall time (latency / concurrency,
      and the server's own limits: moto is one Python process) and their CPU;
    - ``decode alone``: the same chunks read from memory (``z[:]``, and
      ``to_dask(z).compute()`` with the blocks of ``remote``, which adds dask's final
      concatenation of the blocks), client CPU;
    - ``copy alone``: a copy of every chunk into memory of its own, on the I/O
      threads: what a cache pays to keep the chunks of a read, and what serving them
      back costs (the floor of the third read);
    - ``concatenate alone``: dask's final step of ``compute()``, which joins the
      blocks of ``remote`` into one array on one thread once the last block is done,
      so nothing overlaps it (the floor of ``to_dask`` adds its wall time).
    """
    import chunkflow
    from chunkflow.engine.pool import inflight_window, io_lanes, map_sharing
    keys = [f"c/{i}/{j}" for i in range(image.shape[0] // 512)
            for j in range(image.shape[1] // 512)]
    lanes = io_lanes(len(keys))
    window = inflight_window(512 * 512 * image.itemsize, lanes)

    def fetch() -> None:
        with z.store.stream_many(keys, window=window, lanes=lanes) as stream:
            def drain(_: object) -> None:
                for _key, value, _version in stream.take():
                    assert value is not None
            map_sharing(drain, range(lanes))

    memory = chunkflow.create_array(None, shape=image.shape, chunks=(512, 512), dtype="u2",
                                    cache=False)
    memory[:] = image
    x = chunkflow.to_dask(memory, blocks=tuple(sizes[0] // 512 for sizes in remote.chunks))
    assert x.chunks == remote.chunks
    blocks = [image[i:i + 512, j:j + 512] for i in range(0, image.shape[0], 512)
              for j in range(0, image.shape[1], 512)]

    def copy() -> None:
        map_sharing(lambda group: [np.array(block) for block in group], blocks)

    from dask.array.core import concatenate3
    rows, cols = (np.cumsum((0,) + sizes) for sizes in remote.chunks)
    grid = [[image[r0:r1, c0:c1].copy() for c0, c1 in zip(cols[:-1], cols[1:])]
            for r0, r1 in zip(rows[:-1], rows[1:])]

    return {f"fetch alone ({window} in flight)": fetch,
            "decode alone, z[:]": lambda: memory[:], "decode alone, to_dask": x.compute,
            "copy alone": copy, "concatenate alone": lambda: concatenate3(grid)}


def report_floor(results: dict[str, Timing], parts: dict[str, Timing]) -> None:
    """The parts of the floor (:func:`floor_parts`), and each reader's time as a
    multiple of its floor: ``max(fetch wall, (fetch client CPU + decode CPU + server
    CPU) / cores)``, as client and server share the cores (tensorstore's floor uses its
    own measured CPU in place of chunkflow's fetch + decode; ``to_dask``'s adds dask's
    concatenation, which runs alone)."""
    print("  floor, in parts")
    for name, (times, requests, (client, server)) in parts.items():
        print(f"    {name:<32} {_fmt(times):>28} {requests:6d} requests   "
              f"cpu {client:5.2f} + server {server:5.2f} s")
    cores = os.cpu_count() or 1
    fetch_times, _, (fetch_cpu, server_cpu) = next(
        timing for name, timing in parts.items() if name.startswith("fetch alone"))
    fetch_wall = statistics.median(fetch_times)
    decode = {"z": parts["decode alone, z[:]"][2][0],
              "dask": parts["decode alone, to_dask"][2][0]}
    copy_times, _, (copy_cpu, _) = parts["copy alone"]
    floors = {name: max(fetch_wall, (fetch_cpu + cpu + server_cpu) / cores)
              for name, cpu in decode.items()}
    # dask joins the blocks after the last one, on one thread: nothing overlaps it.
    concatenate_times, _, (concatenate_cpu, _) = parts["concatenate alone"]
    floors["dask"] = (max(fetch_wall, (fetch_cpu + decode["dask"] - concatenate_cpu
                                       + server_cpu) / cores)
                      + statistics.median(concatenate_times))
    # The read that caches decodes and keeps a copy; the cached read only copies.
    floors["keep"] = max(fetch_wall, (fetch_cpu + decode["z"] + copy_cpu + server_cpu) / cores)
    floors["cached"] = statistics.median(copy_times)
    for name, (times, _, (client, server)) in results.items():
        if name == "tensorstore":
            floor = max(fetch_wall, (client + server) / cores)
        else:
            floor = floors["dask" if "to_dask" in name else "keep" if "caches" in name
                           else "cached" if "cached" in name else "z"]
        print(f"    {name:<32} {statistics.median(times):7.3f} s = "
              f"{statistics.median(times) / floor:4.2f}x its floor {floor:5.3f} s")


def xarray_read(target: Target, image: np.ndarray, repeat: int) -> None:
    """``xr.open_dataset(url, engine=..., chunks=...)["img"].values``: chunkflow's
    engine beside xarray's zarr engine (zarr-python 3), as a dask user loads it."""
    import warnings

    import xarray as xr
    served = target.served
    results: dict[str, Any] = {}
    options = target.options or None
    for chunks in ({}, "auto"):
        for engine in ("chunkflow", "zarr"):
            def load(engine: str = engine, chunks: Any = chunks) -> np.ndarray:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the zarr engine's consolidated note
                    ds = xr.open_dataset(target.url("ds.zarr"), engine=engine, chunks=chunks,
                                         storage_options=options)
                    return ds["img"].values

            np.testing.assert_array_equal(load(), image)
            attempt(results, f"{engine} chunks={chunks!r}",
                    lambda load=load: timed(load, repeat, served))
    report(f"xarray open_dataset(...)['img'].values, {image.shape} uint16 in 512^2 chunks",
           results)


def window_reads(target: Target, image: np.ndarray, count: int, repeat: int) -> None:
    import chunkflow
    rng = np.random.default_rng(1)
    corners = rng.integers(0, image.shape[0] - WINDOW, (count, 2))
    chosen = [(slice(int(y), int(y) + WINDOW), slice(int(x), int(x) + WINDOW))
              for y, x in corners]
    served = target.served
    results: dict[str, Any] = {}

    def run(read: Callable[[Any], np.ndarray]) -> Timing:
        np.testing.assert_array_equal(read(chosen[0]), image[chosen[0]])
        return timed(lambda: [read(w) for w in chosen], repeat, served)

    z = target.chunkflow("sharded.zarr", cache=False)
    attempt(results, "chunkflow, no cache", lambda: run(lambda w: z[w]))

    def cached() -> Any:
        # A fresh cache per run: shard indexes (and inner chunks) read in this run only.
        def once() -> None:
            zc = target.chunkflow("sharded.zarr", cache=chunkflow.ChunkCache(256 * 2**20))
            for w in chosen:
                zc[w]
        return timed(once, repeat, served)

    attempt(results, "chunkflow, fresh cache", cached)
    attempt(results, "zarr-python 3", lambda: run(target.zarr("sharded.zarr").__getitem__))
    def ts_case() -> Any:
        tarray = target.tensorstore("sharded.zarr")
        return run(lambda w: tarray[w].read().result())

    attempt(results, "tensorstore", ts_case)
    report(f"{count} random {WINDOW}^2 windows of {image.shape} in shards of "
           f"{target.chunkflow('sharded.zarr').shards} (one after another)", results)


def full_write(target: Target, image: np.ndarray, repeat: int) -> None:
    import chunkflow
    served = target.served
    results: dict[str, Any] = {}
    z = chunkflow.create_array(target.url("w-chunkflow.zarr"), shape=image.shape,
                               chunks=(512, 512), dtype="u2", overwrite=True,
                               storage_options=target.options, cache=False)
    attempt(results, "chunkflow z[:] = x",
            lambda: timed(lambda: z.__setitem__(slice(None), image), repeat, served))

    def zarr_case() -> Any:
        import zarr
        zarray = zarr.create_array(target.url("w-zarr.zarr"), shape=image.shape,
                                   chunks=(512, 512), dtype="u2", overwrite=True,
                                   storage_options=target.options)
        return timed(lambda: zarray.__setitem__(slice(None), image), repeat, served)

    attempt(results, "zarr-python 3 z[:] = x", zarr_case)
    np.testing.assert_array_equal(target.chunkflow("w-chunkflow.zarr")[:], image)
    report("full write, same array", results)


def object_store(target: Target, name: str) -> Any:
    """zarr-python's ObjectStore over obstore's S3Store of ``name``."""
    import obstore.store
    import zarr.storage
    inner = obstore.store.S3Store(BUCKET, prefix=name, endpoint=target.served.url,
                                  access_key_id="testing", secret_access_key="testing",
                                  region="us-west-2", client_options={"allow_http": True})
    return zarr.storage.ObjectStore(inner)


def report_cpu(title: str, results: dict[str, Timing], nbytes: int, base: str,
               floor: str) -> None:
    """One line per case: time, requests, the client's CPU seconds per GiB moved, that
    CPU above the ``floor`` case's (decoding or encoding the same chunks in memory: the
    share every backend spends alike), and both as ratios to the ``base`` case's."""
    print(f"  {title}")
    if base not in results or floor not in results:
        return
    gib = nbytes / 2**30
    base_time = statistics.median(results[base][0])
    base_cpu, floor_cpu = results[base][2][0], results[floor][2][0]
    for name, (times, requests, (client, server)) in results.items():
        share = (client - floor_cpu) / (base_cpu - floor_cpu)
        above = f"{(client - floor_cpu) / gib:6.2f} s/GiB ({share:4.2f}x)"
        print(f"    {name:<34} {_fmt(times):>28} {requests:4d} requests   "
              f"client cpu {client / gib:6.2f} s/GiB ({client / base_cpu:4.2f}x), above the "
              f"codec {above if name != floor else '-':>22}, server {server:5.2f} s, "
              f"time {statistics.median(times) / base_time:4.2f}x")


def backends(target: Target, image: np.ndarray, repeat: int) -> None:
    """The full read and write through each client backend (see the module doc), beside
    the same read and write of an in-memory array: the codec's share of the CPU."""
    import zarr

    import chunkflow
    served, results = target.served, {}

    def backend(choice: str) -> Any:
        return chunkflow.config.set({"chunkflow.io.object-backend": choice})

    memory = chunkflow.create_array(None, shape=image.shape, chunks=(512, 512), dtype="u2",
                                    cache=False)
    memory[:] = image
    attempt(results, "chunkflow read, in memory", lambda: timed(lambda: memory[:], repeat, served))
    for choice in ("obstore", "fsspec"):
        with backend(choice):
            z = target.chunkflow("full.zarr", cache=False)
        assert type(z.store).__name__ == {"obstore": "ObstoreStore", "fsspec": "FsspecStore"}[choice]
        np.testing.assert_array_equal(z[:], image)
        attempt(results, f"chunkflow read, {choice}", lambda z=z: timed(lambda: z[:], repeat, served))
    adapted = chunkflow.open_array(object_store(target, "full.zarr"), mode="r", cache=False)
    attempt(results, "chunkflow read, zarr ObjectStore", lambda: timed(lambda: adapted[:], repeat, served))
    theirs = zarr.open_array(object_store(target, "full.zarr"), mode="r")
    attempt(results, "zarr-python 3 read, ObjectStore", lambda: timed(lambda: theirs[:], repeat, served))
    report_cpu(f"client CPU, full read of {image.nbytes / 2**20:.0f} MiB", results, image.nbytes,
               "chunkflow read, fsspec", "chunkflow read, in memory")
    results = {}
    attempt(results, "chunkflow write, in memory",
            lambda: timed(lambda: memory.__setitem__(slice(None), image), repeat, served))
    for choice in ("obstore", "fsspec"):
        with backend(choice):
            z = chunkflow.create_array(target.url(f"w-{choice}.zarr"), shape=image.shape,
                                       chunks=(512, 512), dtype="u2", overwrite=True,
                                       storage_options=target.options, cache=False)
        attempt(results, f"chunkflow write, {choice}",
                lambda z=z: timed(lambda: z.__setitem__(slice(None), image), repeat, served))
    written = chunkflow.create_array(object_store(target, "w-adapter.zarr"), shape=image.shape,
                                     chunks=(512, 512), dtype="u2", overwrite=True, cache=False)
    attempt(results, "chunkflow write, zarr ObjectStore",
            lambda: timed(lambda: written.__setitem__(slice(None), image), repeat, served))
    zwritten = zarr.create_array(object_store(target, "w-zarr-os.zarr"), shape=image.shape,
                                 chunks=(512, 512), dtype="u2", overwrite=True)
    attempt(results, "zarr-python 3 write, ObjectStore",
            lambda: timed(lambda: zwritten.__setitem__(slice(None), image), repeat, served))
    for name in ("w-obstore.zarr", "w-fsspec.zarr"):
        np.testing.assert_array_equal(target.chunkflow(name, cache=False)[:], image)
    report_cpu("client CPU, full write of the same array", results, image.nbytes,
               "chunkflow write, fsspec", "chunkflow write, in memory")


def _mean3(block: np.ndarray) -> np.ndarray:
    from scipy import ndimage
    return ndimage.uniform_filter(block.astype("f4"), 3)


def map_job(target: Target, image: np.ndarray, repeat: int) -> None:
    import dask.array as da
    import zarr

    import chunkflow
    served = target.served
    results: dict[str, Any] = {}
    source = target.url("full.zarr")

    def ours() -> None:  # each run replaces the last run's output, as zarr's below
        chunkflow.map_chunks(_mean3, source, out=target.url("m-chunkflow.zarr"),
                             depth=1, dtype="f4", storage_options=target.options,
                             overwrite=True)

    def theirs() -> None:
        x = da.from_zarr(zarr.open_array(source, mode="r", storage_options=target.options))
        y = x.map_overlap(_mean3, depth=1, boundary="reflect", dtype="f4")
        y.to_zarr(zarr.create_array(target.url("m-zarr.zarr"), shape=x.shape,
                                    chunks=(512, 512), dtype="f4", overwrite=True,
                                    storage_options=target.options))

    attempt(results, "chunkflow map_chunks", lambda: timed(ours, repeat, served))
    attempt(results, "dask map_overlap + zarr 3", lambda: timed(theirs, repeat, served))
    expected = _mean3(image)
    np.testing.assert_allclose(target.chunkflow("m-chunkflow.zarr")[:], expected, rtol=1e-6)
    report("map job: 3x3 mean filter, uint16 -> float32, array to array (threads)", results)


# ------------------------------------------------------------------ main

def write_arrays(folder: Path, full: np.ndarray, sharded: np.ndarray, shard: int) -> None:
    import chunkflow
    z = chunkflow.create_array(str(folder / "full.zarr"), shape=full.shape, chunks=(512, 512),
                               dtype="u2")
    z[:] = full
    s = chunkflow.create_array(str(folder / "sharded.zarr"), shape=sharded.shape,
                               chunks=(256, 256), shards=(shard, shard), dtype="u2")
    s[:] = sharded
    import xarray as xr
    xr.Dataset({"img": (("y", "x"), full)}).to_zarr(
        folder / "ds.zarr", encoding={"img": {"chunks": (512, 512)}}, zarr_format=2,
        consolidated=True)


def upload(target: Target, folder: Path) -> None:
    import s3fs
    fs = s3fs.S3FileSystem(**target.options)
    fs.mkdir(BUCKET)
    fs.put(str(folder) + "/", f"{BUCKET}/", recursive=True)


#: Each workload: how it runs, and whether it runs over S3 only.
WORKLOADS: dict[str, tuple[Callable[..., None], bool]] = {
    "read": (lambda target, full, sharded, count, repeat: full_read(target, full, repeat), False),
    "xarray": (lambda target, full, sharded, count, repeat: xarray_read(target, full, repeat),
               False),
    "windows": (lambda target, full, sharded, count, repeat:
                window_reads(target, sharded, count, repeat), False),
    "write": (lambda target, full, sharded, count, repeat: full_write(target, full, repeat), True),
    "map": (lambda target, full, sharded, count, repeat: map_job(target, full, repeat), True),
    "backends": (lambda target, full, sharded, count, repeat: backends(target, full, repeat),
                 True),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="32 MiB, 1024^2 shards")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--delay", type=float, default=0.02, help="seconds per request")
    parser.add_argument("--windows", type=int, default=None, help="default 100 (quick: 20)")
    parser.add_argument("--only", default="http,s3", help="targets: http, s3 or both")
    parser.add_argument("--workloads", default="all",
                        help="all, or some of: read,xarray,windows,write,map,backends")
    parser.add_argument("--serve", choices=["http", "s3"], help=argparse.SUPPRESS)
    parser.add_argument("--root", default=".", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.root, args.delay)
        return
    full_shape = (4096, 4096) if args.quick else (8192, 16384)
    side, shard = (2048, 1024) if args.quick else (8192, 4096)
    count = args.windows or (20 if args.quick else 100)
    folder = Path(tempfile.mkdtemp(prefix="chunkflow-bench-objects-"))
    full, sharded = make_image(full_shape), make_image((side, side), seed=1)
    print(f"{args.delay * 1e3:.0f} ms per request; median [range] of {args.repeat} runs; "
          "requests counted at the server (last run)")
    try:
        write_arrays(folder, full, sharded, shard)
        for kind in args.only.split(","):
            served = Served(kind, folder, args.delay)
            try:
                target = Target(served)
                print(f"\n{kind}:")
                if kind == "s3":
                    upload(target, folder)
                chosen = set(WORKLOADS if args.workloads == "all" else args.workloads.split(","))
                for name, (run, s3_only) in WORKLOADS.items():
                    if name in chosen and (kind == "s3" or not s3_only):
                        run(target, full, sharded, count, args.repeat)
            finally:
                served.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
