"""Folders of a user's files for the tests that writers never touch them: write a tree,
and take its fingerprint (every file's bytes and every folder) to compare before and
after."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

#: A user's project: a thesis, photos (with an empty folder) and a todo list.
MYDOCS = {
    "thesis/chapter1.tex": b"\\chapter{Introduction}\n",
    "thesis/figures/plot.pdf": b"%PDF-1.4 not really\n",
    "photos/cat.jpg": bytes(range(256)) * 4,
    "photos/2024/": None,  # an empty folder
    "todo.txt": b"- finish chapter 2\n",
}


def write_tree(root: Path, files: Mapping[str, bytes | None]) -> None:
    """Create ``files`` below ``root``: a name ending in ``/`` is an (empty) folder."""
    for name, data in files.items():
        target = root / name
        if data is None:
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def fingerprint(root: Path) -> dict[str, str]:
    """Every folder (``"folder"``) and file (the SHA-256 of its bytes) below ``root``, by
    path relative to it; a missing ``root`` gives ``{}``."""
    found: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        base = Path(folder).relative_to(root).as_posix()
        for name in dirs:
            found[name if base == "." else f"{base}/{name}"] = "folder"
        for name in files:
            rel = name if base == "." else f"{base}/{name}"
            found[rel] = hashlib.sha256((Path(folder) / name).read_bytes()).hexdigest()
    return found


def files_kept(before: Mapping[str, str], after: Mapping[str, str],
               replaced: str | None = None) -> list[str]:
    """The files of ``before`` that are missing or changed in ``after`` (empty when every
    one is kept), except those below ``replaced`` (a relative folder, ``""`` for all)."""
    def outside(name: str) -> bool:
        return replaced is None or not (replaced == "" or name == replaced
                                        or name.startswith(replaced + "/"))

    return sorted(name for name, digest in before.items()
                  if digest != "folder" and outside(name) and after.get(name) != digest)
