"""The counted-steps rule: one trace's count is what the per-step mask counts."""

from __future__ import annotations

import numpy as np

from nar_gap.tasks.counted_steps import internal_step_count, internal_steps


def test_a_traces_count_is_its_column_of_the_internal_mask():
    lengths = np.array([1, 2, 3, 7])  # a one-hint trace still counts its one step
    mask = np.asarray(internal_steps(lengths, 8))
    assert mask.sum(0).tolist() == [internal_step_count(n) for n in lengths]
    assert [internal_step_count(n) for n in lengths] == [1, 1, 2, 6]
