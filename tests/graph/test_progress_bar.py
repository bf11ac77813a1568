"""``progress=True`` picks tqdm's bar: Jupyter's widget only when ipywidgets is there.

tqdm.auto chooses the widget in a Jupyter kernel and, without ipywidgets, warns
"IProgress not found" on every bar; chunkflow then uses the text bar, quietly.
"""

from __future__ import annotations

import sys
import types
import warnings

import numpy as np
import pytest

import chunkflow
from chunkflow.graph import scheduler

pytest.importorskip("tqdm")


def test_without_ipywidgets_the_text_bar_is_used_without_a_warning(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # not importable
    assert scheduler._widgets_available() is False
    # tqdm.auto as a Jupyter kernel sees it: it would warn, then draw a widget.
    jupyter = types.ModuleType("tqdm.auto")

    def widget_bar(*args: object, **kwargs: object) -> None:
        warnings.warn("IProgress not found. Please update jupyter and ipywidgets.",
                      stacklevel=2)
        raise AssertionError("the widget bar was chosen without ipywidgets")

    jupyter.tqdm = widget_bar  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tqdm.auto", jupyter)
    data = np.arange(64.0).reshape(8, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        total = chunkflow.reduce(chunkflow.array(data, chunks=(4, 4)), "sum", progress=True)
    assert total["sum"] == data.sum()
    assert "100%" in capsys.readouterr().err  # the text bar drew


def test_with_ipywidgets_tqdm_auto_chooses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ipywidgets", types.ModuleType("ipywidgets"))
    monkeypatch.setattr(scheduler, "find_spec", lambda name: object())
    assert scheduler._widgets_available() is True
