"""Every ``# type: ignore`` in chunkflow names its error code and says why.

CI runs ``python -m mypy chunkflow`` (pyproject.toml's ``[tool.mypy]``, which also warns
of ignores that are no longer needed); this test keeps the ignores that remain honest.
"""

from __future__ import annotations

import re
from pathlib import Path

import chunkflow

ROOT = Path(chunkflow.__file__).resolve().parent

IGNORE = re.compile(r"#\s*type:\s*ignore(?P<rest>.*)$")
WITH_REASON = re.compile(r"^\[[a-z-]+(, *[a-z-]+)*\]\s+#\s*\S")


def unexplained_ignores(source: str, filename: str) -> list[str]:
    """``file:line`` of every ``type: ignore`` without ``[code]`` and a ``# reason``."""
    found = []
    for number, line in enumerate(source.splitlines(), 1):
        match = IGNORE.search(line)
        if match and not WITH_REASON.match(match.group("rest")):
            found.append(f"{filename}:{number}: {line.strip()}")
    return found


def test_every_type_ignore_has_a_code_and_a_reason():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        found += unexplained_ignores(path.read_text(), str(path.relative_to(ROOT.parent)))
    assert not found, "write `# type: ignore[code]  # why`:\n" + "\n".join(found)


def test_unexplained_ignores_are_found():
    assert unexplained_ignores("x = f()  # type: ignore\n", "m.py") == [
        "m.py:1: x = f()  # type: ignore"]
    assert unexplained_ignores("x = f()  # type: ignore[arg-type]\n", "m.py") != []
    assert unexplained_ignores("x = f()  # type: ignore[arg-type]  # f takes ints\n", "m.py") == []
    assert unexplained_ignores("x = f()  # type: ignore[arg-type, misc]  # why\n", "m.py") == []
