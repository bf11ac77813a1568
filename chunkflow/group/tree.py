"""A group's hierarchy as a tree: box-drawing text for terminals, HTML for notebooks."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chunkflow.group.core import Group

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
    """The members of a group, recursively, read once when the tree is built.

    Parameters
    ----------
    group : Group
        The root of the tree (shown by its name, ``/`` for the store root).
    level : int, optional
        How many levels below ``group`` to show (``None``: all).

    Examples
    --------
    >>> tree = Tree.from_nodes(TreeNode("/", children=[TreeNode("a", "(2,) int8")]))
    >>> print(tree)
    /
    └── a (2,) int8
    >>> tree._repr_html_().startswith("<ul")
    True
    """

    def __init__(self, group: Group | None, level: int | None = None) -> None:
        if level is not None and level < 0:
            raise ValueError(f"tree level must be None or >= 0, got {level}")
        self.root = _build(group, group.name, level) if group is not None else TreeNode("/")

    @classmethod
    def from_nodes(cls, root: TreeNode) -> Tree:
        """A tree over already-built nodes."""
        tree = cls(None)
        tree.root = root
        return tree

    def __repr__(self) -> str:
        lines = [self.root.label]
        _text(self.root, "", lines)
        return "\n".join(lines)

    def __str__(self) -> str:
        return repr(self)

    def _repr_html_(self) -> str:
        return f"<ul class='chunkflow-tree'>{_html(self.root)}</ul>"


def _build(group: Group, name: str, level: int | None) -> TreeNode:
    from chunkflow.group.core import Group

    node = TreeNode(name)
    if level == 0:
        return node
    deeper = None if level is None else level - 1
    for child_name, child in group.members():
        if isinstance(child, Group):
            node.children.append(_build(child, child_name, deeper))
        else:
            node.children.append(TreeNode(child_name, f"{child.shape} {child.dtype}"))
    return node


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
