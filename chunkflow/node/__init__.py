"""Code shared by arrays and groups.

* :mod:`chunkflow.node.base` — the properties and lifecycle every node has;
* :mod:`chunkflow.node.documents` — where node documents live, reading and writing them;
* :mod:`chunkflow.node.attrs` — user attributes, persisted on every change;
* :mod:`chunkflow.node.info` — the ``.info`` reports;
* :mod:`chunkflow.node.reprs` — text and notebook (HTML) representations.
"""

from chunkflow.node.reprs import (
    array_html,
    array_repr,
    describe_codecs,
    group_html,
    group_repr,
)

__all__ = ["array_html", "array_repr", "describe_codecs", "group_html", "group_repr"]
