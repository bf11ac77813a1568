"""The lowest-dependencies run (.ci/lowest_deps.py, which CI runs): its pins come from
pyproject.toml, every runtime dependency has one, and the tests it runs cover what a
user does first (arrays v2 and v3, the codecs, sharding, to_dask, store, map_chunks)."""

from __future__ import annotations

import doctest
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11, as .ci/lowest_deps.py

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / ".ci" / "lowest_deps.py"


@pytest.fixture(scope="module")
def lowest() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lowest_deps", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_runtime_dependency_is_pinned_at_its_lower_bound(lowest: ModuleType) -> None:
    declared = [Requirement(text) for text in
                tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]]
    pins = [Requirement(pin) for pin in lowest.lowest_pins(ROOT / "pyproject.toml")]
    assert [(pin.name, pin.extras) for pin in pins] == [(d.name, d.extras) for d in declared]
    for pin, wanted in zip(pins, declared, strict=True):
        (exact,) = pin.specifier
        lower = Version(exact.version)
        assert exact.operator == "==" and wanted.specifier.contains(lower)
        assert any(s.operator == ">=" and Version(s.version) == lower for s in wanted.specifier)


def test_a_dependency_without_a_lower_bound_is_refused(lowest: ModuleType,
                                                       tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\ndependencies = ["numpy>=1.24", "zict"]\n')
    with pytest.raises(SystemExit, match="'zict' declares no single '>=' lower bound"):
        lowest.lowest_pins(pyproject)
    assert doctest.testmod(lowest).failed == 0


def test_the_marked_tests_cover_what_users_do_first(lowest: ModuleType) -> None:
    files = lowest.marked_test_files(ROOT)
    text = "\n".join((ROOT / name).read_text() for name in files)
    for needed in ("zarr_format=2", "shards=", '"crc32c"', '"blosc"', '"zstd"', '"zlib"',
                   '"lzma"', "to_dask(", "chunkflow.store(", "map_chunks("):
        assert needed in text, f"no test run at the lowest versions uses {needed}"


def test_ci_runs_it() -> None:
    assert "python .ci/lowest_deps.py" in (ROOT / ".ci" / "run").read_text()
