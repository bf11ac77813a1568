"""A hierarchy drawn as a tree: box-drawing text for terminals, HTML for notebooks.

Pure rendering: :meth:`chunkflow.Group.tree` reads the members and hands the result
over as :class:`TreeNode` data.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

__all__ = ["Tree", "TreeNode"]


@dataclass
class TreeNode:
    """One line of the tree: a name, a description (arrays) and children (groups)."""

    name: str
    description: str = ""
    children: list[TreeNode] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.name} {self.description}" if self.description else self.name


class Tree:
    """A hierarchy, printable as text or shown as HTML.

    Parameters
    ----------
    root : TreeNode
        The top line (a group's name, ``/`` for the store root) and everything below.

    Examples
    --------
    >>> tree = Tree(TreeNode("/", children=[TreeNode("a", "(2,) int8"),
    ...                                     TreeNode("g", children=[TreeNode("b")])]))
    >>> print(tree)
    /
    ├── a (2,) int8
    └── g
        └── b
    >>> tree._repr_html_().startswith("<ul")
    True
    """

    def __init__(self, root: TreeNode) -> None:
        self.root = root

    def __repr__(self) -> str:
        lines = [self.root.label]
        _text(self.root, "", lines)
        return "\n".join(lines)

    def __str__(self) -> str:
        return repr(self)

    def _repr_html_(self) -> str:
        return f"<ul class='chunkflow-tree'>{_html(self.root)}</ul>"


def _text(node: TreeNode, prefix: str, lines: list[str]) -> None:
    for i, child in enumerate(node.children):
        last = i == len(node.children) - 1
        lines.append(f"{prefix}{'└── ' if last else '├── '}{child.label}")
        _text(child, prefix + ("    " if last else "│   "), lines)


def _html(node: TreeNode) -> str:
    label = html.escape(node.name)
    if node.description:
        label += f" <span style='color:gray'>{html.escape(node.description)}</span>"
    inner = "".join(_html(child) for child in node.children)
    return f"<li>{label}" + (f"<ul>{inner}</ul>" if inner else "") + "</li>"
