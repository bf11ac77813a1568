"""roomy_heap: numpy's histogram temporaries reuse heap memory in workers that trim it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from chunkflow import heap
from chunkflow.heap import roomy_heap

# Minor page faults of 20 histograms of a 4 MiB float32 block, with the body wrapped in
# roomy_heap or not (after the heap settled), in a process started as distributed's
# nanny starts workers.
CHILD = textwrap.dedent("""
    import resource, sys, time
    import numpy as np
    from chunkflow import heap
    from chunkflow.heap import roomy_heap
    a = np.random.default_rng(0).random(1 << 20, dtype=np.float32)
    expected = np.histogram(a, bins=256, range=(0.0, 1.0))[0]
    def faults(roomy):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(20):
            if roomy:
                with roomy_heap():
                    counts = np.histogram(a, bins=256, range=(0.0, 1.0))[0]
            else:
                counts = np.histogram(a, bins=256, range=(0.0, 1.0))[0]
            assert (counts == expected).all()
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    faults(True)
    time.sleep(heap.SETTLE_SECONDS * 4)  # the heap settled: thresholds back, trimmed
    print(faults(False), faults(True))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_a_trimming_worker_keeps_the_histogram_s_temporaries_while_it_counts() -> None:
    env = {**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536"}
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    plain, roomy = map(int, out)
    # Each temporary is mapped and faulted anew without it (~130 pages per 65536
    # values); with it, the heap is reused.
    assert roomy * 10 < plain, (plain, roomy)


def test_threads_counting_at_once_leave_the_heap_as_they_found_it() -> None:
    data = np.random.default_rng(1).random(10_000)
    expected = np.histogram(data, bins=7)[0]
    results = []

    def count() -> None:
        for _ in range(20):
            with roomy_heap():
                results.append(np.histogram(data, bins=7)[0])

    threads = [threading.Thread(target=count) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(np.array_equal(r, expected) for r in results) and len(results) == 80
    assert heap._active == [0]


def test_nothing_is_changed_where_the_process_does_not_trim(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    heap._libc.cache_clear()
    try:
        assert heap._libc() is None
        with roomy_heap():
            assert heap._active == [0]
    finally:
        heap._libc.cache_clear()


class _RecordingLibc:
    """glibc's two calls, recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, ...]] = []

    def mallopt(self, param: int, value: int) -> int:
        self.calls.append(("mallopt", param, value))
        return 1

    def malloc_trim(self, pad: int) -> int:
        self.calls.append(("malloc_trim", pad))
        return 1


def test_blocks_back_to_back_keep_the_heap_and_it_is_trimmed_once_idle(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    libc = _RecordingLibc()
    monkeypatch.setattr(heap, "_libc", lambda: libc)
    monkeypatch.setattr(heap, "SETTLE_SECONDS", 0.2)
    monkeypatch.setattr(heap, "_raised", [False])
    monkeypatch.setattr(heap, "_settler", [])  # a settler of its own, for the fake glibc
    for _ in range(5):  # a worker's blocks one after another
        with roomy_heap():
            pass
    # Raised once, and not trimmed between the blocks: the next one reuses the heap.
    assert libc.calls == [("mallopt", heap.M_TRIM_THRESHOLD, heap.ROOMY_BYTES),
                          ("mallopt", heap.M_MMAP_THRESHOLD, heap.ROOMY_BYTES)]
    for _ in range(100):
        if heap._raised == [False]:
            break
        threading.Event().wait(0.05)
    assert heap._raised == [False]
    assert [call[0] for call in libc.calls[2:]] == ["mallopt", "mallopt", "malloc_trim"]
    assert libc.calls[-3][1:] == (heap.M_MMAP_THRESHOLD, heap.DEFAULT_MMAP_THRESHOLD)
