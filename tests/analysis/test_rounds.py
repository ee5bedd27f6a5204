"""Each round's share of the level, fixed before its data (analysis.rounds)."""

from __future__ import annotations

import pytest

from nar_gap.analysis import rounds


def test_each_round_s_share_of_the_level_is_fixed_before_its_data():
    """The first block at equal shares; after it, halving shares that sum to
    at most one however many rounds follow, each independent of later rounds.
    Seen failing with the first block's share carried on past it."""
    share = rounds.level_share
    assert [share(r, 3) for r in (1, 2, 3)] == [pytest.approx(1 / 3)] * 3
    assert [share(r, 3) for r in (4, 5, 6)] == [0.5, 0.25, 0.125]
    assert sum(share(r, 3) for r in range(4, 200)) <= 1
    assert [share(r, 1) for r in (1, 2)] == [1.0, 0.5]
    assert rounds.across_rounds(0.02, 4, 3) == 0.04
    assert rounds.across_rounds(0.02, 2, 3) == pytest.approx(0.06)
    assert rounds.across_rounds(0.6, 5, 3) == 1.0


@pytest.mark.parametrize("round, closed", [(0, 3), (1, 0), (-2, 3)])
def test_a_round_or_block_below_one_is_refused(round, closed):
    with pytest.raises(ValueError, match="rounds count from 1"):
        rounds.level_share(round, closed)
