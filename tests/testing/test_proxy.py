"""The fault proxy in front of a real moto S3 server: it forwards faithfully, counts,
delays in parallel, and fails the share and the methods it is told to, reproducibly."""

from __future__ import annotations

import http.client
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import fsspec
import pytest

from chunkflow.testing.proxy import FaultProxy

pytestmark = pytest.mark.s3

BUCKET = "chunkflow-test"


@pytest.fixture
def upstream(s3_server: dict[str, Any]) -> str:
    return str(s3_server["endpoint_url"])


def _fs(options: dict[str, Any], url: str, **kwargs: Any) -> Any:
    return fsspec.filesystem("s3", skip_instance_cache=True,
                             **{**options, "endpoint_url": url, **kwargs})


def _request(url: str, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        # Public objects: anonymous requests may read them back.
        conn.request(method, path, body=body, headers={"x-amz-acl": "public-read"})
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


@pytest.fixture
def prefix() -> Iterator[str]:
    yield f"{BUCKET}/proxy-{uuid.uuid4().hex}"


def test_forwards_reads_writes_and_listings_and_counts_them(
    s3_server: dict[str, Any], upstream: str, prefix: str
) -> None:
    values = {f"{prefix}/k{i}": bytes([i]) * (1 + 1000 * i) for i in range(5)}
    with FaultProxy(upstream) as proxy:
        fs = _fs(s3_server, proxy.url)
        fs.pipe(values)
        assert fs.cat(list(values)) == values
        assert sorted(fs.find(prefix)) == sorted(values)
        fs.rm(list(values))
    assert proxy.requests["PUT"] == 5
    assert proxy.requests["GET"] >= 5 + 1  # the values, then the listing
    assert proxy.requests["POST"] == 1  # one batched delete
    assert not proxy.failures
    assert _fs(s3_server, upstream).find(prefix) == []
    proxy.reset()
    assert not proxy.requests


def test_head_answers_keep_the_upstream_length(
    s3_server: dict[str, Any], upstream: str, prefix: str
) -> None:
    with FaultProxy(upstream) as proxy:
        fs = _fs(s3_server, proxy.url)
        fs.pipe_file(f"{prefix}/h", b"x" * 123)
        assert fs.info(f"{prefix}/h")["size"] == 123
    assert proxy.requests["HEAD"] == 1


class _GatedProxy(FaultProxy):
    """A proxy whose delays end only once ``parties`` requests wait in them at once:
    delays that queued instead of overlapping would never get there."""

    def __init__(self, upstream: str, delay: float, parties: int) -> None:
        super().__init__(upstream, delay=delay)
        self.gate = threading.Barrier(parties)
        self.pauses: list[float] = []

    def _pause(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.gate.wait(timeout=60)  # a queued delay breaks the barrier: the request fails


def test_delay_applies_per_request_and_in_parallel(upstream: str, prefix: str) -> None:
    with FaultProxy(upstream) as plain:
        _request(plain.url, "PUT", f"/{prefix}/d", b"1")
    with _GatedProxy(upstream, delay=0.2, parties=20) as proxy:
        with ThreadPoolExecutor(20) as pool:
            answers = list(pool.map(lambda _: _request(proxy.url, "GET", f"/{prefix}/d"),
                                    range(20)))
        assert answers == [(200, b"1")] * 20
        assert proxy.pauses == [0.2] * 20 and not proxy.gate.broken
        assert proxy.most_in_flight == 20
        proxy.reset()
        assert proxy.most_in_flight == 0


def test_most_in_flight_counts_overlapping_requests_only(upstream: str, prefix: str) -> None:
    with FaultProxy(upstream) as proxy:
        for _ in range(5):
            assert _request(proxy.url, "PUT", f"/{prefix}/s", b"s")[0] == 200
        assert proxy.requests["PUT"] == 5 and proxy.most_in_flight == 1


@pytest.mark.slow
def test_a_burst_of_connections_is_queued_not_refused(upstream: str, prefix: str) -> None:
    with FaultProxy(upstream) as proxy:
        _request(proxy.url, "PUT", f"/{prefix}/b", b"b")
        with ThreadPoolExecutor(200) as pool:
            answers = list(pool.map(lambda _: _request(proxy.url, "GET", f"/{prefix}/b"),
                                    range(400)))
    assert answers == [(200, b"b")] * 400


def test_failures_answer_like_s3_for_the_chosen_methods_only(upstream: str, prefix: str) -> None:
    with FaultProxy(upstream, fail_share=1.0, fail_methods=["GET"], faults=["503"]) as proxy:
        assert _request(proxy.url, "PUT", f"/{prefix}/f", b"v")[0] == 200
        status, body = _request(proxy.url, "GET", f"/{prefix}/f")
    assert status == 503
    assert b"<Code>SlowDown</Code>" in body
    assert proxy.failures == {"GET": 1}
    assert _request(upstream, "GET", f"/{prefix}/f") == (200, b"v")


def test_a_dropped_connection_breaks_the_client(upstream: str, prefix: str) -> None:
    with FaultProxy(upstream, fail_share=1.0, faults=["drop"]) as proxy, \
            pytest.raises((ConnectionError, http.client.HTTPException)):
        _request(proxy.url, "GET", f"/{prefix}/missing")


def test_failing_after_the_upstream_loses_only_the_answer(upstream: str, prefix: str) -> None:
    with FaultProxy(upstream, fail_share=1.0, fail_methods=["PUT"], faults=["500"],
                    fail_stage="after") as proxy:
        status, body = _request(proxy.url, "PUT", f"/{prefix}/a", b"done")
    assert (status, b"<Code>InternalError</Code>" in body) == (500, True)
    assert _request(upstream, "GET", f"/{prefix}/a") == (200, b"done")


def _pattern(upstream: str, prefix: str, seed: int) -> list[int]:
    with FaultProxy(upstream, fail_share=0.3, faults=["500", "503"], seed=seed) as proxy:
        return [_request(proxy.url, "GET", f"/{prefix}/s")[0] for _ in range(40)]


def test_a_seed_gives_the_same_failures_and_the_share_is_kept(upstream: str, prefix: str) -> None:
    _request(upstream, "PUT", f"/{prefix}/s", b"s")
    first = _pattern(upstream, prefix, seed=3)
    assert first == _pattern(upstream, prefix, seed=3)
    assert first != _pattern(upstream, prefix, seed=4)
    assert set(first) == {200, 500, 503}
    assert 4 <= sum(status != 200 for status in first) <= 20


@pytest.mark.slow
def test_s3fs_gets_through_a_tenth_of_requests_failing(
    s3_server: dict[str, Any], upstream: str, prefix: str
) -> None:
    values = {f"{prefix}/r{i}": bytes([i]) * 100 for i in range(30)}
    with FaultProxy(upstream, fail_share=0.1, seed=0) as proxy:
        fs = _fs(s3_server, proxy.url)
        fs.pipe(values)
        assert fs.cat(list(values)) == values
    assert proxy.failures["GET"] + proxy.failures["PUT"] > 0


@pytest.mark.parametrize("kwargs", [{"fail_share": 1.5}, {"faults": ["404"]}, {"faults": []},
                                    {"fail_stage": "during"}])
def test_bad_arguments_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        FaultProxy("http://127.0.0.1:1", **kwargs)


def test_url_needs_a_running_proxy() -> None:
    proxy = FaultProxy("http://127.0.0.1:1")
    with pytest.raises(RuntimeError, match="not running"):
        _ = proxy.url
    assert "stopped" in repr(proxy)
    with pytest.raises(ValueError, match="upstream"):
        FaultProxy("https://example.org")
