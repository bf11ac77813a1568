"""Test helpers for anyone's store: the store conformance suite and counting stores.

A third-party store runs chunkflow's store contract by subclassing
:class:`StoreConformance` in its own test suite (pytest is needed, as for
``zarr.testing.store``)::

    from chunkflow.testing import StoreConformance

    class TestMyStore(StoreConformance):
        @pytest.fixture
        def store(self):
            return MyStore(...)

:class:`CountingStore` and :class:`CountingMapping` count requests, so a test can prove
that a read costs the requests it should. :class:`FaultProxy` sits in front of a local
HTTP server (a moto S3 server) and adds latency and failures to its requests.
:class:`SyntheticStore` computes an array's chunks from their index, and
:class:`ChecksumStore` checksums the chunks written to it and keeps none: jobs of a
million chunks without storage (``benchmarks/bench_scale.py``).
"""

from chunkflow.testing.counting import CountingMapping, CountingStore, Counts
from chunkflow.testing.proxy import FaultProxy
from chunkflow.testing.sink import ChecksumStore, Tally
from chunkflow.testing.store import StoreConformance
from chunkflow.testing.synthetic import SyntheticStore

__all__ = [
    "ChecksumStore",
    "CountingMapping",
    "CountingStore",
    "Counts",
    "FaultProxy",
    "StoreConformance",
    "SyntheticStore",
    "Tally",
]
