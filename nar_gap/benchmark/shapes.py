"""Bucketed shapes: graph sizes and trace lengths rounded up to a few values.

A jitted function compiles once per input shape; padding every batch up to
one of a few buckets (padded nodes and steps are masked out exactly) turns
"once per size and length" into a handful of compiles.  Pure Python, no
imports, so configurations can use it cheaply.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def bucket_nodes(num_nodes: int, buckets: Sequence[int]) -> int:
    """The smallest bucket >= num_nodes (num_nodes itself when none fits)."""
    fitting = [b for b in buckets if b >= num_nodes]
    return min(fitting) if fitting else num_nodes


def bucket_steps(num_steps: int, buckets: Sequence[int] = ()) -> int:
    """The smallest of ``buckets`` that fits, else the next rung of 2, 3, 4, 6, 8, ...

    The ladder wastes at most 50 % of the steps and has two rungs per octave.
    """
    fitting = [b for b in buckets if b >= num_steps]
    if fitting:
        return min(fitting)
    if num_steps <= 2:
        return max(num_steps, 1)
    power = 2 ** math.floor(math.log2(num_steps))
    if num_steps == power:
        return power
    return power * 3 // 2 if num_steps <= power * 3 // 2 else power * 2
