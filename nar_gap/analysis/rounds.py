"""Confirmation in rounds: each round's share of the level, fixed in advance.

A study that confirms hypotheses round after round, each round on seeds of
its own, judges a round within itself (its own Holm family) and also across
the rounds.  Across the rounds each round is held to a share of the level
fixed before its data: then a later round never weakens an earlier verdict,
as dividing the level by however many rounds a table holds would.

The rule: a first block of ``closed`` rounds shares the level equally
(Bonferroni over its rounds); from there round r holds ``2 ** -(r -
closed)`` of it, so the second block spends at most the level, however
many rounds follow.  Each block then holds at most the level, the two
together at most twice it.
"""

from __future__ import annotations


def level_share(round: int, closed: int) -> float:
    """The share of the level round ``round`` is judged at across rounds.

    ``closed``: the rounds of the first block.  Raises ``ValueError`` for a
    round or a block below one.
    """
    if round < 1 or closed < 1:
        raise ValueError(f"rounds count from 1 (round {round}, block of {closed})")
    if round <= closed:
        return 1.0 / closed
    return 0.5 ** (round - closed)


def across_rounds(p: float, round: int, closed: int) -> float:
    """``p`` (a round's Holm p, or a turn's) judged across the rounds.

    Within a block the chance that some confirmation is false is at most the
    sum of its rounds' levels: ``p`` is compared with the level's
    :func:`level_share`, here as ``p`` divided by the share.
    """
    return min(1.0, p / level_share(round, closed))
