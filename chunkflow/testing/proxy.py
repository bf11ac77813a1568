"""A loopback HTTP proxy that adds latency and faults in front of any HTTP server.

Object stores are slow and unreliable in ways a local server is not: every request
waits for a round trip, and a share of them fail (S3 answers ``500 InternalError`` or
``503 SlowDown``, or the connection drops). :class:`FaultProxy` puts both in front of
a local server (a moto S3 server, a static file server), so tests can check that a
job survives faults and benchmarks can measure what latency costs, by request counts
rather than guesses.

The proxy forwards each request to the upstream server as it came (method, path,
headers, body) and the answer back; it speaks HTTP/1.1 with keep-alive on both
sides, one thread per client connection.
"""

from __future__ import annotations

import http.client
import random
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Literal
from urllib.parse import urlsplit

from chunkflow.errors import InternalError, InvalidArgumentError, NotRunningError

__all__ = ["FaultProxy"]

FaultKind = Literal["500", "503", "drop"]
# Headers that describe one hop, not the message (RFC 9110 section 7.6.1).
_HOP_HEADERS = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te",
                "trailer", "upgrade", "proxy-authenticate", "proxy-authorization"}
_S3_ERRORS = {
    "500": (500, "InternalError", "We encountered an internal error. Please try again."),
    "503": (503, "SlowDown", "Please reduce your request rate."),
}


class _Server(ThreadingHTTPServer):
    """A threaded server with a deep accept queue: a burst of concurrent clients (an
    fsspec batch of hundreds of requests) must queue, not be refused."""

    request_queue_size = 1024
    daemon_threads = True
    allow_reuse_address = True
    proxy: FaultProxy


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive with the client
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        """Quiet: the test output is not the place for an access log."""

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline().strip():  # trailers, then the empty line
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _handle(self) -> None:
        proxy = self.server.proxy
        body = self._body()
        fault, stage = proxy._draw(self.command)
        try:
            answer = self._answer(proxy, body, fault, stage)
        finally:
            proxy._done()  # before the client can see the answer (and send again)
        if isinstance(answer, str):
            self._fail(answer)
        else:
            self._send(*answer)

    def _answer(self, proxy: FaultProxy, body: bytes, fault: FaultKind | None,
                stage: str) -> FaultKind | tuple[int, str, list[tuple[str, str]], bytes]:
        """The upstream's answer to pass on, or the fault to answer with instead."""
        if proxy.delay:
            proxy._pause(proxy.delay)
        if fault is not None and stage == "before":
            return fault
        try:
            answer = proxy._forward(self.command, self.path, self.headers.items(), body)
        except (http.client.HTTPException, OSError):
            return "drop"  # the upstream went away: so does the answer
        # Stage "after": the upstream did the work, the answer is lost.
        return fault if fault is not None else answer

    def _send(self, status: int, reason: str, headers: list[tuple[str, str]],
              data: bytes) -> None:
        self.send_response(status, reason)
        for name, value in headers:
            if name.lower() not in _HOP_HEADERS and name.lower() != "content-length":
                self.send_header(name, value)
        length = dict((k.lower(), v) for k, v in headers).get("content-length")
        self.send_header("Content-Length", length if self.command == "HEAD" and length
                         else str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _fail(self, fault: FaultKind) -> None:
        if fault == "drop":
            # Reset rather than close cleanly: the client sees a broken connection
            # (ECONNRESET / "server disconnected"), as when a load balancer drops it.
            self.close_connection = True
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            return
        status, code, message = _S3_ERRORS[fault]
        data = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
                f"<Message>{message}</Message><Resource>{self.path}</Resource>"
                f"<RequestId>chunkflow-fault-proxy</RequestId></Error>").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = do_OPTIONS = _handle


class FaultProxy:
    """An HTTP proxy on 127.0.0.1 in front of ``upstream``, adding a delay per request
    and failing a share of them.

    Use it as a context manager (it starts on entry and stops on exit), then point the
    client at :attr:`url` instead of the upstream server.  Requests are counted by
    method in :attr:`requests`, injected failures in :attr:`failures`, and the most
    requests it held at once (arrived, not yet answered) in :attr:`most_in_flight`:
    how many a client really keeps in flight.

    Parameters
    ----------
    upstream : str
        The server's base URL, ``http://127.0.0.1:PORT``.
    delay : float
        Seconds each request waits before it is forwarded (a round trip's latency).
        Requests wait in parallel, as over a network.
    fail_share : float
        The share of requests of ``fail_methods`` that fail, from 0 to 1.
    fail_methods : iterable of str
        The HTTP methods that may fail (``GET`` reads, ``PUT`` writes...).
    faults : iterable of {"500", "503", "drop"}
        How a failing request fails, chosen at random among these: an S3-style
        ``500 InternalError`` or ``503 SlowDown`` answer, or a connection reset.
    fail_stage : {"before", "after"}
        Fail before the request reaches the upstream server, or after (the upstream
        did the work but its answer is lost, as when a connection drops mid-answer).
    seed : int, optional
        Seeds the random draws (which requests fail, and how).
    port : int
        The port to listen on; 0 picks a free one.

    Examples
    --------
    >>> import urllib.request, urllib.error
    >>> from http.server import HTTPServer, BaseHTTPRequestHandler
    >>> class Hello(BaseHTTPRequestHandler):
    ...     def do_GET(self):
    ...         self.send_response(200); self.send_header("Content-Length", "5")
    ...         self.end_headers(); self.wfile.write(b"hello")
    ...     def log_message(self, *args): pass
    >>> server = HTTPServer(("127.0.0.1", 0), Hello)
    >>> threading.Thread(target=server.serve_forever, daemon=True).start()
    >>> upstream = f"http://127.0.0.1:{server.server_port}"
    >>> with FaultProxy(upstream, fail_share=0.5, faults=["503"], seed=1) as proxy:
    ...     answers = []
    ...     for _ in range(20):
    ...         try:
    ...             answers.append(urllib.request.urlopen(proxy.url + "/x").read())
    ...         except urllib.error.HTTPError as err:
    ...             answers.append(err.code)
    >>> sorted(set(answers), key=str)
    [503, b'hello']
    >>> proxy.requests["GET"], proxy.failures["GET"] == answers.count(503)
    (20, True)
    >>> server.shutdown(); server.server_close()
    """

    def __init__(
        self,
        upstream: str,
        *,
        delay: float = 0.0,
        fail_share: float = 0.0,
        fail_methods: Iterable[str] = ("GET", "PUT"),
        faults: Iterable[FaultKind] = ("500", "503", "drop"),
        fail_stage: Literal["before", "after"] = "before",
        seed: int | None = None,
        port: int = 0,
    ) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname:
            raise InvalidArgumentError(f"upstream must be an http://host:port URL, not {upstream!r}")
        if not 0.0 <= fail_share <= 1.0:
            raise InvalidArgumentError(f"fail_share must lie between 0 and 1, not {fail_share!r}")
        self.faults: tuple[FaultKind, ...] = tuple(faults)
        unknown = set(self.faults) - {"500", "503", "drop"}
        if unknown or not self.faults:
            raise InvalidArgumentError(f"faults must be among '500', '503', 'drop', not {faults!r}")
        if fail_stage not in ("before", "after"):
            raise InvalidArgumentError(f"fail_stage must be 'before' or 'after', not {fail_stage!r}")
        self.upstream = upstream.rstrip("/")
        self.delay = float(delay)
        self.fail_share = float(fail_share)
        self.fail_methods = frozenset(m.upper() for m in fail_methods)
        self.fail_stage = fail_stage
        self.requests: Counter[str] = Counter()
        self.failures: Counter[str] = Counter()
        self.most_in_flight = 0
        self._in_flight = 0
        self._host, self._port = parts.hostname, parts.port or 80
        self._port_wanted = port
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._local = threading.local()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        """The proxy's base URL (``http://127.0.0.1:PORT``); set once started."""
        if self._server is None:
            raise NotRunningError("the proxy is not running; use it as a context manager")
        return f"http://127.0.0.1:{self._server.server_port}"

    def start(self) -> FaultProxy:
        """Listen on 127.0.0.1 and serve in a daemon thread."""
        if self._server is not None:
            return self
        server = _Server(("127.0.0.1", self._port_wanted), _Handler)
        server.proxy = self
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="chunkflow-proxy",
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = self._thread = None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def reset(self) -> None:
        """Zero the request and failure counters, and :attr:`most_in_flight`."""
        with self._lock:
            self.requests.clear()
            self.failures.clear()
            self.most_in_flight = self._in_flight

    def __repr__(self) -> str:
        where = self.url if self._server is not None else "stopped"
        return (f"FaultProxy({self.upstream!r} at {where}, delay={self.delay}, "
                f"fail_share={self.fail_share}, fail_methods={sorted(self.fail_methods)})")

    # ------------------------------------------------------------ per request

    def _draw(self, method: str) -> tuple[FaultKind | None, str]:
        """Count a request (also as in flight) and decide whether (and how) it fails."""
        with self._lock:
            self.requests[method] += 1
            self._in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self._in_flight)
            if method not in self.fail_methods or self._rng.random() >= self.fail_share:
                return None, self.fail_stage
            self.failures[method] += 1
            return self._rng.choice(self.faults), self.fail_stage

    def _done(self) -> None:
        """A request answered (or failed): no longer in flight."""
        with self._lock:
            self._in_flight -= 1

    def _pause(self, seconds: float) -> None:
        """Wait out the delay of one request (each in its own handler thread)."""
        time.sleep(seconds)

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=60)
            self._local.conn = conn
        return conn

    def _forward(self, method: str, path: str, headers: Iterable[tuple[str, str]],
                 body: bytes) -> tuple[int, str, list[tuple[str, str]], bytes]:
        """Send one request upstream (a kept-alive connection per handler thread; one
        retry on a fresh connection if the kept one was closed meanwhile)."""
        sent = [(k, v) for k, v in headers
                if k.lower() not in _HOP_HEADERS and k.lower() != "content-length"]
        for attempt in (0, 1):
            conn = self._connection()
            try:
                conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
                for name, value in sent:
                    conn.putheader(name, value)
                if body or method in ("PUT", "POST", "PATCH"):
                    conn.putheader("Content-Length", str(len(body)))
                conn.endheaders(body or None)
                answer = conn.getresponse()
                data = answer.read()
                return answer.status, answer.reason, answer.getheaders(), data
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt:
                    raise
        raise InternalError("unreachable")
