"""A static file server on 127.0.0.1 that answers HTTP range requests and counts them.

Python's ``SimpleHTTPRequestHandler`` ignores ``Range`` (it sends the whole file), so
virtual-reference tests, which read byte ranges of a NetCDF/HDF5 file the way a
remote reader would, serve the folder with this handler instead. Every GET is logged
as ``(path, start, end)`` (``end`` exclusive; ``None`` for a whole-file GET).
"""

from __future__ import annotations

import http.server
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["RangeServer", "serve_ranges"]

_RANGE = re.compile(r"bytes=(\d+)-(\d*)$")


class RangeServer(http.server.ThreadingHTTPServer):
    """The server; ``gets`` lists the GET requests it answered, in arrival order."""

    daemon_threads = True
    request_queue_size = 1024

    def __init__(self, folder: Path) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.folder = folder
        self.gets: list[tuple[str, int | None, int | None]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def ranged(self, name: str) -> list[tuple[int, int]]:
        """The ``(start, end)`` of every range request for the file ``name``."""
        with self.lock:
            return [(s, e) for p, s, e in self.gets if p == "/" + name and s is not None
                    and e is not None]

    def reset(self) -> None:
        with self.lock:
            self.gets.clear()


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: RangeServer

    def log_message(self, *args: Any) -> None:
        pass

    def _file(self) -> Path | None:
        path = (self.server.folder / self.path.split("?")[0].lstrip("/")).resolve()
        if self.server.folder.resolve() not in path.parents or not path.is_file():
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        return path

    def do_HEAD(self) -> None:  # noqa: N802 (http.server's naming)
        path = self._file()
        if path is not None:
            self.send_response(200)
            self.send_header("Content-Length", str(os.path.getsize(path)))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()

    def do_GET(self) -> None:  # noqa: N802
        path = self._file()
        if path is None:
            return
        data = path.read_bytes()
        match = _RANGE.match(self.headers.get("Range", ""))
        if match is None:
            start, end, status = None, None, 200
            body = data
        else:
            start = int(match.group(1))
            end = min(int(match.group(2)) + 1 if match.group(2) else len(data), len(data))
            body, status = data[start:end], 206
        with self.server.lock:
            self.server.gets.append((self.path, start, end))
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")  # type: ignore[operator]
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def serve_ranges(folder: Path) -> Iterator[RangeServer]:
    """Serve ``folder`` on 127.0.0.1 for the ``with`` block."""
    server = RangeServer(folder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
