"""Fixtures shared across test files."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def shared_runs(tmp_path_factory):
    """One runs directory for the whole session.

    Runs are content-addressed (``nar_gap.pipeline.run_dir``), so a test that
    needs a configuration another test already trained resumes it instead of
    training again: the ablation tests train what the notebook tests show.
    """
    return tmp_path_factory.mktemp("runs")
