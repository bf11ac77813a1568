"""Per-thread scratch buffers, reused from call to call.

Both the codec pipelines (decoding into strided views) and the array's chunk I/O
(decoding chunks a read covers partly) use them, so they live below both: this module
imports nothing of chunkflow and any layer may import it.
"""

from __future__ import annotations

import threading

import numpy as np

__all__ = ["scratch_buffer"]

_scratch = threading.local()


def scratch_buffer(shape: tuple[int, ...], dtype: np.dtype, slot: str = "codec") -> np.ndarray:
    """A C-contiguous array for this thread only, reused from call to call.

    Decoding many chunks into views of a larger output cannot decompress in place
    (the views are strided); decompressing into a reused buffer and copying once
    avoids allocating and page-faulting a fresh buffer per chunk. The caller must be
    done with the buffer before its next call on the same thread with the same
    ``slot``: the pipelines use ``"codec"``, callers holding a decoded chunk while a
    pipeline runs use another slot. Not for object dtypes (raw memory is no object).

    Examples
    --------
    >>> a = scratch_buffer((2, 3), np.dtype("u2"))
    >>> b = scratch_buffer((3, 2), np.dtype("u2"))
    >>> c = scratch_buffer((3, 2), np.dtype("u2"), slot="chunk")
    >>> a.shape, b.shape, np.shares_memory(a, b), np.shares_memory(b, c)
    ((2, 3), (3, 2), True, False)
    """
    nbytes = dtype.itemsize
    for size in shape:
        nbytes *= size
    buffers = getattr(_scratch, "buffers", None)
    if buffers is None:
        buffers = _scratch.buffers = {}
    buffer = buffers.get(slot)
    if buffer is None or buffer.nbytes < nbytes:
        buffer = buffers[slot] = np.empty(max(nbytes, 1), dtype=np.uint8)
    return buffer[:nbytes].view(dtype).reshape(shape)
