"""Every notebook under notebooks/ runs top to bottom (code cells, in a scratch folder),
twice in the same folder, writing only in a folder named after itself; and it is stored
with the outputs of such a run, plots included, for readers who open it on a repository
page.

Notebooks read ``CHUNKFLOW_NOTEBOOK_SCALE`` (``small`` by default and here, ``full`` for
the big run); here they draw with matplotlib's non-interactive Agg backend. After
changing a notebook, store it again with its outputs (a fresh kernel, run in a scratch
folder so nothing is left in the repository; needs nbclient and ipykernel)::

    python tests/test_notebooks.py              # every notebook
    python tests/test_notebooks.py quickstart   # the ones whose name contains that
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
MAX_NOTEBOOK_BYTES = 1_000_000
OUTPUT_FOLDER = "chunkflow-demo"  # in .gitignore: what the notebooks and the demo write
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


def run_code_cells(path: Path, run: str) -> None:
    """The code cells of ``path``, in order, in one namespace (as a kernel runs them)."""
    namespace: dict[str, object] = {"__name__": "__notebook__"}
    for index, source in enumerate(code_cells(path)):
        try:
            exec(compile(source, f"{path.name}[cell {index}]", "exec"), namespace)
        except Exception as err:  # pragma: no cover - the message is the point
            raise AssertionError(f"{path.name}, {run} run, code cell {index} failed: "
                                 f"{err!r}") from err


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_twice_in_one_folder(path: Path, small_notebook_env: Path) -> None:
    """Top to bottom, then again in the same folder: the second run replaces what the
    first wrote. Each run writes only in the notebook's own folder (named after it)
    under ``chunkflow-demo/``, the one folder git ignores for the demo and notebooks, so
    notebooks run in one folder never meet either."""
    for run in ("first", "second"):
        run_code_cells(path, run)
        written = sorted(entry.name for entry in small_notebook_env.iterdir())
        assert written == [OUTPUT_FOLDER], (
            f"{path.name}, {run} run: wrote {written} in the folder it ran in; everything "
            f"it writes belongs in {OUTPUT_FOLDER}/{path.stem}/")
        inside = sorted(entry.name for entry in (small_notebook_env / OUTPUT_FOLDER).iterdir())
        assert inside == [path.stem], f"{path.name}, {run} run: wrote {inside}"


def test_the_output_folder_is_ignored_by_git() -> None:
    ignored = (ROOT / ".gitignore").read_text().split()
    assert f"{OUTPUT_FOLDER}/" in ignored


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_outputs_carry_no_progress_widget_warning(path: Path) -> None:
    """Without ipywidgets the text bar is used, quietly (tqdm.auto would warn)."""
    for cell in json.loads(path.read_text())["cells"]:
        for output in cell.get("outputs", []):
            text = "".join(output.get("text", ""))
            assert "IProgress not found" not in text, f"{path.name}: {text[:200]}"


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


def plots(source: str) -> bool:
    """Whether a code cell draws a matplotlib figure."""
    return "plt.subplots(" in source or "plt.figure(" in source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_with_its_outputs(path: Path) -> None:
    """One run top to bottom in a fresh kernel, no errors, every plot as an image."""
    cells = [cell for cell in json.loads(path.read_text())["cells"]
             if cell["cell_type"] == "code"]
    again = "store it with its outputs: python tests/test_notebooks.py"
    counts = [cell["execution_count"] for cell in cells]
    assert counts == list(range(1, len(cells) + 1)), (
        f"{path.name}: not the outputs of one run top to bottom; {again}")
    outputs = [output for cell in cells for output in cell["outputs"]]
    assert outputs, f"{path.name}: stored without outputs; {again}"
    assert not [o for o in outputs if o["output_type"] == "error"], f"{path.name}: an error"
    for index, cell in enumerate(cells):
        if plots("".join(cell["source"])):
            images = [o for o in cell["outputs"] if "image/png" in o.get("data", {})]
            assert images, f"{path.name}, code cell {index}: its plot is not stored; {again}"
    assert path.stat().st_size < MAX_NOTEBOOK_BYTES, f"{path.name}: too big to read online"


def test_some_notebooks_plot() -> None:
    assert sum(any(plots(source) for source in code_cells(path)) for path in NOTEBOOKS) >= 3


def execute(path: Path, folder: Path) -> Any:
    """``path`` run top to bottom in a fresh kernel working in ``folder``, with outputs."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=600, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(folder)}})
    client.execute()
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = coalesce_streams(cell.outputs)
    return notebook


def coalesce_streams(outputs: list[Any]) -> list[Any]:
    """Consecutive pieces of one stream as one output, each line as a terminal shows it.

    A progress bar redraws its line after a carriage return: only the last drawing of
    each line is kept, as Jupyter itself displays it.
    """
    merged: list[Any] = []
    for output in outputs:
        if (output.output_type == "stream" and merged
                and merged[-1].output_type == "stream" and merged[-1].name == output.name):
            merged[-1].text += output.text
        else:
            merged.append(output)
    for output in merged:
        if output.output_type == "stream":
            lines = output.text.split("\n")
            output.text = "\n".join(
                next((part for part in reversed(line.split("\r")) if part), "")
                for line in lines)
    return merged


def store_with_outputs(names: list[str]) -> None:
    """Run the notebooks (all, or those whose name holds one of ``names``) and save them."""
    import nbformat

    # The kernel imports this checkout's chunkflow and draws inline (PNG outputs).
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    os.environ.pop("MPLBACKEND", None)
    # Without ipywidgets, tqdm.auto warns that it draws text bars: text is what a
    # repository page shows anyway.
    os.environ["PYTHONWARNINGS"] = "ignore:IProgress not found"
    os.environ.pop("CHUNKFLOW_NOTEBOOK_SCALE", None)
    for path in NOTEBOOKS:
        if names and not any(name in path.name for name in names):
            continue
        with tempfile.TemporaryDirectory() as folder:
            notebook = execute(path, Path(folder))
        nbformat.write(notebook, path)
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size / 1024:.0f} KiB")


if __name__ == "__main__":
    store_with_outputs(sys.argv[1:])
