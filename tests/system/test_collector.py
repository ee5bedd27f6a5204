"""The collector's first threshold at nar_gap's entry points (system/collector.py)."""

from __future__ import annotations

import gc
from types import SimpleNamespace

import pytest

from nar_gap import cli
from nar_gap.paper.report import notebook
from nar_gap.system import collector, files


@pytest.fixture
def cpython_default():
    """CPython's thresholds for the test, the session's put back after."""
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def test_the_first_threshold_is_raised_and_never_lowered(cpython_default):
    assert collector.collect_less_often() == (collector.TRACING_FIRST_THRESHOLD, 10, 10)
    gc.set_threshold(50_000, 3, 4)
    assert collector.collect_less_often() == (50_000, 3, 4)


def test_the_command_line_collects_less_often(cpython_default, capsys):
    assert cli.main([]) == 0  # bare: the help
    assert gc.get_threshold()[0] == collector.TRACING_FIRST_THRESHOLD


def test_a_notebook_s_setup_collects_less_often(cpython_default, monkeypatch):
    monkeypatch.setattr(notebook, "check_backend", lambda: SimpleNamespace(message=""))
    monkeypatch.setenv(files.FIGURE_FORMATS_ENV, "")
    notebook.setup("smoke")
    assert gc.get_threshold()[0] == collector.TRACING_FIRST_THRESHOLD
