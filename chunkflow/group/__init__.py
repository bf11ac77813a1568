"""Groups: the :class:`Group` class, opening any node, trees, consolidated metadata."""

from chunkflow.group.core import Group
from chunkflow.group.hierarchy import (
    consolidate_metadata,
    group,
    open_consolidated,
    open_group,
    open_node,
)
from chunkflow.group.tree import Tree

__all__ = ["Group", "Tree", "consolidate_metadata", "group", "open_consolidated", "open_group",
           "open_node"]
