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


def bucket_shape(
    num_nodes: int,
    num_steps: int,
    shape_buckets: Sequence[tuple[int, int]] = (),
    node_buckets: Sequence[int] = (),
    time_buckets: Sequence[int] = (),
) -> tuple[int, int]:
    """A batch's padded ``(nodes, steps)``: the cheapest shape bucket that holds it.

    A shape bucket ``(N, T)`` holds a batch with at most ``N`` nodes and ``T``
    steps; among those that do, the one with the least work (``N² T``, the
    pair tensors of every step) wins.  A batch that no shape bucket holds
    (or when there are none) is padded by :func:`bucket_nodes` and
    :func:`bucket_steps` separately.
    """
    holding = [
        (n * n * t, n, t) for n, t in shape_buckets if n >= num_nodes and t >= num_steps
    ]
    if holding:
        _, nodes, steps = min(holding)
        return nodes, steps
    return bucket_nodes(num_nodes, node_buckets), bucket_steps(num_steps, time_buckets)


def largest_padded_nodes(
    num_nodes: int,
    shape_buckets: Sequence[tuple[int, int]] = (),
    node_buckets: Sequence[int] = (),
) -> int:
    """The most nodes :func:`bucket_shape` can pad a ``num_nodes`` graph to."""
    holding = [n for n, _ in shape_buckets if n >= num_nodes]
    return max([bucket_nodes(num_nodes, node_buckets), *holding])
