"""README.md is right: its snippets run as written and print what their comments say.

Each Python block is saved as its own script and run with ``python script.py`` in a new
process whose ``multiprocessing`` start method is ``spawn`` (what macOS and Windows use,
and what dask's own process pools use everywhere), in README order, in one scratch folder:
later blocks read the data earlier ones wrote. The command-line examples run through
``python -m chunkflow`` at their place in that order.

Printed values: a line ``print(...)  # text`` must print exactly ``text``, as one line,
once. The comment is the expected output and nothing else; explanations go on other
lines. A ``print`` without a comment is not checked.
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
BLOCK = re.compile(r"```(python|bash)\n(.*?)```", re.S)
BLOCKS = [(kind, body) for kind, body in BLOCK.findall(README)]
# The Quickstart's install commands are not re-run here: CI runs the second line, and
# tests/test_fresh_install.py runs the first in a fresh venv.
QUICKSTART = BLOCK.search(README[README.index("## Quickstart"):]).group(2)

# Imported by every Python process of a snippet run (the script and the processes it
# starts), as Python imports ``sitecustomize`` at start-up from the path.
SITECUSTOMIZE = '''
import builtins, io, json, multiprocessing, os, sys

multiprocessing.set_start_method("spawn", force=True)
_SCRIPT = os.environ["README_SCRIPT"]
_LOG = os.environ["README_PRINT_LOG"]
_print = builtins.print


def _recording_print(*args, sep=" ", end="\\n", file=None, flush=False):
    """Print, and log (line, text) of the script's own prints in its main process."""
    _print(*args, sep=sep, end=end, file=file, flush=flush)
    caller = sys._getframe(1)
    if (file not in (None, sys.stdout) or multiprocessing.parent_process() is not None
            or os.path.abspath(caller.f_code.co_filename) != _SCRIPT):
        return
    text = io.StringIO()
    _print(*args, sep=sep, end="", file=text)
    with open(_LOG, "a") as log:
        log.write(json.dumps([caller.f_lineno, text.getvalue()]) + "\\n")


builtins.print = _recording_print
'''


def expected_prints(source: str) -> dict[int, str]:
    """Line number -> comment, for every line that starts with ``print(`` and has one."""
    expected: dict[int, str] = {}
    starts: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        line = token.start[0]
        if token.type == tokenize.NAME and line not in starts:
            starts[line] = token.string if token.line.lstrip().startswith(token.string) else ""
        if token.type == tokenize.COMMENT and starts.get(line) == "print":
            expected[line] = token.string[1:].strip()
    return expected


def run_python_block(number: int, body: str, folder: Path, site: Path) -> None:
    script = folder / f"readme_block_{number:02d}.py"
    script.write_text(body)
    log = folder / f"readme_block_{number:02d}.prints.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
           "MPLBACKEND": "Agg", "README_SCRIPT": str(script), "README_PRINT_LOG": str(log)}
    done = subprocess.run([sys.executable, script.name], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (
        f"README python block {number} failed as `python {script.name}`:\n{body}\n"
        f"--- stderr ---\n{done.stderr[-4000:]}")
    printed: dict[int, list[str]] = {}
    for entry in log.read_text().splitlines() if log.exists() else []:
        line, text = json.loads(entry)
        printed.setdefault(line, []).append(text)
    wrong = [
        f"line {line}: `{body.splitlines()[line - 1].strip()}` printed "
        f"{printed.get(line, [])!r}, the comment says {comment!r}"
        for line, comment in expected_prints(body).items()
        if printed.get(line) != [comment]
    ]
    assert not wrong, f"README python block {number}:\n" + "\n".join(wrong)


def run_commands(body: str, folder: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    for line in body.splitlines():
        if not line.startswith("chunkflow "):
            continue
        command = [sys.executable, "-m", "chunkflow", *shlex.split(line)[1:]]
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True, env=env,
                              timeout=300)
        assert done.returncode == 0, f"README: {line!r} failed:\n{done.stderr}"


def test_readme_has_snippets() -> None:
    assert sum(kind == "python" for kind, _ in BLOCKS) >= 8
    checked = sum(len(expected_prints(body)) for kind, body in BLOCKS if kind == "python")
    assert checked >= 10, "the README shows what its prints print"


def test_comments_of_prints_are_found() -> None:
    source = ('print(1)  # 1\nx = 2  # not a print\nprint(x)\n'
              'if x:\n    print("a # b", x)  # a # b 2\nprinter(3)  # 3\n')
    assert expected_prints(source) == {1: "1", 5: "a # b 2"}


def make_folders(tmp_path: Path) -> tuple[Path, Path]:
    """The scratch working folder, and the folder of the ``sitecustomize`` module."""
    site, folder = tmp_path / "site", tmp_path / "work"
    site.mkdir()
    folder.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return folder, site


def test_scripts_run_under_spawn_and_prints_are_checked(tmp_path: Path) -> None:
    folder, site = make_folders(tmp_path)
    script = "import multiprocessing\nprint(multiprocessing.get_start_method())  # spawn\n"
    run_python_block(0, script, folder, site)
    with pytest.raises(AssertionError, match="printed \\['spawn'\\], the comment says 'fork'"):
        run_python_block(1, script.replace("# spawn", "# fork"), folder, site)
    with pytest.raises(AssertionError, match="printed \\[\\]"):  # a checked print not run
        run_python_block(2, "if False:\n    print(1)  # 1\n", folder, site)
    with pytest.raises(AssertionError, match="failed as `python readme_block_03.py`"):
        run_python_block(3, "import no_such_module_here\n", folder, site)


@pytest.mark.slow
def test_every_snippet_runs_as_a_script(tmp_path: Path) -> None:
    folder, site = make_folders(tmp_path)
    for number, (kind, body) in enumerate(BLOCKS):
        if kind == "python":
            run_python_block(number, body, folder, site)
        elif body != QUICKSTART:
            run_commands(body, folder)


def test_scripts_that_start_processes_are_guarded() -> None:
    starters = ('scheduler="processes"', "LocalCluster(", "ProcessPoolExecutor(")
    for number, (kind, body) in enumerate(BLOCKS):
        if kind == "python" and any(starter in body for starter in starters):
            assert 'if __name__ == "__main__":' in body, (
                f"README python block {number} starts processes without a main guard:\n{body}")


def test_the_graph_is_what_the_readme_says() -> None:
    import chunkflow

    assert "as two\n  layers, however many chunks there are" in README
    z = chunkflow.zeros((10**6, 10**6), chunks=(1000, 1000), dtype="u1")
    x = chunkflow.to_dask(z, (slice(0, 2500), slice(None, None, 2)))
    assert len(x.dask.layers) == 2
    assert "at most half of\n  its blocks) re-plans" in README
    assert len(x[10:20, :1000].dask.layers) == 2, "a small slice re-plans, in two layers"
    assert "getitem" in x[10:2000:3].name, "a large slice is dask's getitem"


def test_the_quick_command_leaves_out_the_slow_cases_and_ci_runs_everything() -> None:
    quick = BLOCK.search(README[README.index("## Tests"):]).group(2).splitlines()[0]
    assert quick.startswith('python -m pytest -n 2 -m "not slow"'), quick
    ci_line = QUICKSTART.splitlines()[1]  # the line CI runs: every test
    assert ci_line.endswith("python -m pytest -n 2") and "slow" not in ci_line, ci_line
