"""Fixtures shared across test files, and the backend self-check before any test."""

from __future__ import annotations

import os

import pytest

import nar_gap  # first: puts any XLA workaround in force before a test imports JAX
from nar_gap.system import collector

collector.collect_less_often()  # the test workers trace as the notebooks do


def pytest_report_header(config):
    return nar_gap.self_check().message


def pytest_sessionstart(session):
    """No test result means anything on a JAX that computes wrong numbers."""
    verdict = nar_gap.self_check()
    if not verdict.ok:
        pytest.exit(verdict.message, returncode=3)


@pytest.fixture(scope="session")
def shared_runs(tmp_path_factory):
    """One runs directory for the whole session, every xdist worker's.

    Runs are content-addressed (``nar_gap.paper.experiments.runs.run_dir``),
    so a test that needs a configuration another test already trained resumes
    it instead of training again: notebook 04 its control arms, notebook 02's
    baselines; notebooks 03 and 05 the BFS runs the faithfulness and stability
    tests train.  The workers share it as ``./run_all.sh``'s notebooks side by
    side share theirs: a run's lock (``nar_gap.training.run.train``) makes a
    second process wait for the first and read the run back.  With one
    directory per worker, the ablation chain trained those controls (Tables
    11-14) a second time.
    """
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return tmp_path_factory.mktemp("runs")
    # The workers' base temps are folders of one per-session folder.
    shared = tmp_path_factory.getbasetemp().parent / "shared_runs"
    shared.mkdir(exist_ok=True)
    return shared
