"""The public objects: :class:`Array` (properties, selections, ``blocks``, ``.info``), :class:`Group`
(navigation, members, trees, consolidated index), the node base they share, attributes,
node documents and reprs.
"""

from chunkflow.core.array import Array
from chunkflow.core.group import Group
from chunkflow.core.reprs import array_html, array_repr, describe_codecs, group_html, group_repr
from chunkflow.core.tree import Tree
from chunkflow.core.verify import VerifyReport

__all__ = [
    "Array",
    "Group",
    "Tree",
    "VerifyReport",
    "array_html",
    "array_repr",
    "describe_codecs",
    "group_html",
    "group_repr",
]
