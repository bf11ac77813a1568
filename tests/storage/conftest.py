"""Fixtures of the storage tests: a folder served over HTTP on 127.0.0.1, behind a
counting, delaying :class:`~chunkflow.testing.FaultProxy`."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chunkflow.testing.proxy import FaultProxy


class _Server(http.server.ThreadingHTTPServer):
    # socketserver listens with a backlog of 5: a burst of new connections would wait
    # for SYN retransmits (1 s, then 3 s...), which is the server's limit, not ours.
    request_queue_size = 1024
    daemon_threads = True


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def http_folder(tmp_path: Path) -> Iterator[tuple[FaultProxy, Path]]:
    """A folder served over HTTP on 127.0.0.1, behind a counting, delaying proxy."""
    handler = functools.partial(_QuietHandler, directory=str(tmp_path))
    server = _Server(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with FaultProxy(f"http://127.0.0.1:{server.server_address[1]}") as proxy:
            yield proxy, tmp_path
    finally:
        server.shutdown()
        server.server_close()
