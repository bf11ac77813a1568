"""Creating and opening arrays and hierarchies, in zarr-python 2 and 3 spellings side by side:
zarr-3 checks, spec building, ``chunks="auto"``, hierarchy opening, convenience
(save/load) and copying.
"""

from chunkflow.api.convenience import (
    copy,
    copy_all,
    copy_store,
    create_group,
    load,
    save,
    save_array,
    save_group,
    tree,
)
from chunkflow.api.creation import (
    array,
    create,
    empty,
    empty_like,
    full,
    full_like,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from chunkflow.api.group_members import Group
from chunkflow.api.hierarchy import (
    consolidate_metadata,
    group,
    open_consolidated,
    open_group,
    open_node,
)
from chunkflow.api.opening import open_array, open_like
from chunkflow.api.zarr3 import create_array, from_array

__all__ = [
    "Group",
    "array",
    "consolidate_metadata",
    "copy",
    "copy_all",
    "copy_store",
    "create",
    "create_array",
    "create_group",
    "empty",
    "empty_like",
    "from_array",
    "full",
    "full_like",
    "group",
    "load",
    "ones",
    "ones_like",
    "open_array",
    "open_consolidated",
    "open_group",
    "open_like",
    "open_node",
    "save",
    "save_array",
    "save_group",
    "tree",
    "zeros",
    "zeros_like",
]
