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
"""

from chunkflow.testing.counting import CountingMapping, CountingStore, Counts
from chunkflow.testing.proxy import FaultProxy
from chunkflow.testing.store import StoreConformance

__all__ = ["CountingMapping", "CountingStore", "Counts", "FaultProxy", "StoreConformance"]
