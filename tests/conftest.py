"""Fixtures shared across test files, and the backend self-check before any test."""

from __future__ import annotations

import pytest

import nar_gap  # first: puts any XLA workaround in force before a test imports JAX


def pytest_report_header(config):
    return nar_gap.self_check().message


def pytest_sessionstart(session):
    """No test result means anything on a JAX that computes wrong numbers."""
    verdict = nar_gap.self_check()
    if not verdict.ok:
        pytest.exit(verdict.message, returncode=3)


@pytest.fixture(scope="session")
def shared_runs(tmp_path_factory):
    """One runs directory for the whole session.

    Runs are content-addressed (``nar_gap.paper.experiments.runs.run_dir``), so a
    test that needs a configuration another test already trained resumes it instead of
    training again: the ablation tests train what the notebook tests show.
    """
    return tmp_path_factory.mktemp("runs")
