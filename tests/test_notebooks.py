"""Every notebook under notebooks/ runs top to bottom (code cells, in a scratch folder).

Notebooks read ``CHUNKFLOW_NOTEBOOK_SCALE`` (``full`` for people, ``small`` here) and
draw with matplotlib's non-interactive Agg backend.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))
STORIES = ["01_image_filtering.ipynb", "02_per_tile_analysis.ipynb",
           "03_larger_than_memory_reduction.ipynb"]


def code_cells(path: Path) -> list[str]:
    notebook = json.loads(path.read_text())
    return ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]


@pytest.fixture
def small_notebook_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A scratch folder, small sizes and the Agg backend; figures closed afterwards."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CHUNKFLOW_NOTEBOOK_SCALE", "small")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    try:
        import matplotlib
    except ImportError:
        yield tmp_path
        return
    backend = matplotlib.get_backend()
    matplotlib.use("Agg")  # if pyplot was imported before MPLBACKEND was set
    yield tmp_path
    import matplotlib.pyplot as plt

    plt.close("all")
    matplotlib.use(backend)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path: Path, small_notebook_env: Path) -> None:
    namespace: dict[str, object] = {"__name__": "__notebook__"}
    for index, source in enumerate(code_cells(path)):
        try:
            exec(compile(source, f"{path.name}[cell {index}]", "exec"), namespace)
        except Exception as err:  # pragma: no cover - the message is the point
            raise AssertionError(f"{path.name}, code cell {index} failed: {err!r}") from err


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_valid_with_cell_ids(path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing cell id is only a warning
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
    assert (notebook.nbformat, notebook.nbformat_minor) >= (4, 5)
    ids = [cell.get("id") for cell in notebook.cells]
    assert all(ids) and len(set(ids)) == len(ids), f"{path.name}: cell ids missing or repeated"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_reads_as_a_story(path: Path) -> None:
    cells = json.loads(path.read_text())["cells"]
    assert cells[0]["cell_type"] == "markdown", "a notebook opens with what it is about"
    assert sum(cell["cell_type"] == "markdown" for cell in cells) >= 3


def test_there_are_notebooks() -> None:
    names = {path.name for path in NOTEBOOKS}
    assert "quickstart.ipynb" in names
    assert set(STORIES) <= names, f"missing: {sorted(set(STORIES) - names)}"
