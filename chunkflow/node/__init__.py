"""Code shared by arrays and groups: text and notebook (HTML) representations."""

from chunkflow.node.reprs import (
    array_html,
    array_repr,
    describe_codecs,
    group_html,
    group_repr,
    shard_layout,
)

__all__ = ["array_html", "array_repr", "describe_codecs", "group_html", "group_repr",
           "shard_layout"]
