"""dm-clrs's graph samplers replayed from their raw random stream, many at once.

A training step draws one batch per seed, each from its own dm-clrs sampler
(``numpy.random.RandomState`` seeded from ``SeedSequence([seed, step])``).
dm-clrs draws sample after sample with a few small RandomState calls each;
called from Python, those calls cost more than the graphs are worth.  Here
the same calls are replayed on the raw 32-bit words of each sampler's
Mersenne Twister, with every sampler of a step (a *lane*) advanced together
as one numpy array.  Every call is reproduced exactly as numpy's legacy
RandomState computes it (numpy/random/src/legacy and distributions):

- ``choice(k)`` and ``choice(p)``: ``randint(0, k)``, masked rejection
  sampling on one word per try (no word when ``k == 1``);
- ``binomial(1, p)``: the inversion algorithm on one double (two words,
  ``(a >> 5) * 2**26 + (b >> 6)`` over ``2**53``), ``1 - X`` when ``p > 0.5``;
- ``uniform(0, 1)``: one double.

Two draws could cost more words than the replay follows: a binomial whose
inversion restarts (``U - qn > px``: rounding allows it only for U a few
ulps below 1, and for none of run.py's edge probabilities) and a choice
rejected :data:`_WINDOW` times in a row (below 2**-32 per draw).  A lane
that meets one, or runs out of pre-drawn words, is marked inexact and its
caller draws the batch with dm-clrs itself.  So every lane returned as
exact holds the graphs dm-clrs draws; ``tests/tasks/test_fast_sampling.py``
compares them, and the batches built from them, with dm-clrs's.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np

# The samplers whose draws are replayed, by the graphs they draw:
# (directed, weighted, with a source node).
SAMPLER_KINDS: dict[str, tuple[bool, bool, bool]] = {
    "BfsSampler": (False, False, True),
    "BellmanFordSampler": (False, True, True),
    "DfsSampler": (True, False, False),
}

MAX_NODES = 63
"""Largest graph replayed (the trace builders hold a node set in a uint64)."""

_WINDOW = 32  # words one bounded draw may look at; each is rejected with p < 1/2
_TWO_TO_MINUS_53 = 1.0 / 9007199254740992.0


@dataclasses.dataclass
class _Stream:
    """Each lane's pre-drawn words and how many it has used (a replay cursor)."""

    words: np.ndarray  # [L, W] uint64 holding 32-bit words
    used: np.ndarray  # [L] int64
    exact: np.ndarray  # [L] bool: False once the replay lost track of the lane

    def peek(self, count: int) -> np.ndarray:
        """The next ``count`` words of every lane, [L, count], without using them."""
        last = self.words.shape[1] - 1
        index = np.minimum(self.used[:, None] + np.arange(count), last)
        return np.take_along_axis(self.words, index, axis=1)

    def advance(self, count: int | np.ndarray) -> None:
        """Mark ``count`` more words used (per lane); past the end, inexact."""
        self.used += count
        self.exact &= self.used <= self.words.shape[1]


@dataclasses.dataclass(frozen=True)
class Graphs:
    """One sampler's worth of graphs per lane.

    Attributes:
        edges: [L, B, N, N] bool, ``A != 0``.
        weights: [L, B, N, N] float64 ``A`` of weighted samplers (0 off the
            edges), None for unweighted ones (``A`` is ``edges`` as 0/1).
        sources: [L, B] int64 source nodes (None for samplers without one).
        exact: [L] bool, False for lanes the replay could not follow.
    """

    edges: np.ndarray
    weights: np.ndarray | None
    sources: np.ndarray | None
    exact: np.ndarray

    @property
    def adjacency(self) -> np.ndarray:
        """dm-clrs's ``A``: int64 0/1 when unweighted, the float64 weights if not."""
        return self.edges.astype(np.int64) if self.weights is None else self.weights


def stream_seeds(seeds: Sequence[int], step: int) -> np.ndarray:
    """``SeedSequence([seed, step]).generate_state(1)[0]`` for each seed, [L] int64.

    The RandomState seed of ``train_batch(seed, step)``'s sampler.
    """
    return np.array(
        [np.random.SeedSequence([s, step]).generate_state(1)[0] for s in seeds],
        dtype=np.int64,
    )


def legacy_words(seeds: Sequence[object], count: int) -> np.ndarray:
    """The first ``count`` raw words of ``RandomState(seed)`` per seed, [L, count].

    ``RandomState(seed)`` costs ~70 us (it first seeds a fresh generator from
    the OS); re-seeding one MT19937 the legacy way, as RandomState itself
    does, costs ~1 us and gives the same state.
    """
    generator = np.random.MT19937(0)
    words = np.empty((len(seeds), count), dtype=np.uint64)
    for lane, seed in enumerate(seeds):
        generator._legacy_seeding(seed)  # noqa: SLF001 (RandomState.seed's own call)
        words[lane] = generator.random_raw(count)
    return words


def _pair_integers(words: np.ndarray) -> np.ndarray:
    """Legacy ``next_double``'s 53-bit integer ``(a >> 5) << 26 | b >> 6`` per pair.

    The double is this integer times 2**-53; the integer, its float and the
    scaling are all exact, as in numpy's C (``(a * 2**26 + b) / 2**53``).
    """
    integers = words[..., 0::2] >> np.uint64(5)
    integers <<= np.uint64(26)
    integers |= words[..., 1::2] >> np.uint64(6)
    return integers


def words_to_doubles(words: np.ndarray) -> np.ndarray:
    """Legacy ``next_double`` (``random_sample``) of pairs of words, [..., k / 2]."""
    return _pair_integers(words).astype(np.float64) * _TWO_TO_MINUS_53


def _bounded(stream: _Stream, high: int) -> np.ndarray:
    """Legacy ``randint(0, high)`` per lane: masked rejection, one word per try."""
    top = high - 1
    if top == 0:  # numpy returns without drawing
        return np.zeros(stream.used.shape, dtype=np.int64)
    mask = np.uint64((1 << top.bit_length()) - 1)
    window = stream.peek(_WINDOW) & mask  # [L, WINDOW]
    accepted = window <= np.uint64(top)
    tries = accepted.argmax(axis=1)
    stream.exact &= accepted.any(axis=1)
    stream.advance(tries + 1)  # the rejected words and the accepted one
    drawn = window[np.arange(len(tries)), tries].astype(np.int64)
    return np.minimum(drawn, top)  # a lane that lost track still indexes safely


def _least_true(predicate: Callable[[int], bool], low: int, high: int) -> int:
    """The least ``k`` in ``[low, high]`` where a monotone ``predicate`` holds.

    ``high`` when it holds nowhere below it (the caller passes an impossible k).
    """
    while low < high:
        middle = (low + high) // 2
        if predicate(middle):
            high = middle
        else:
            low = middle + 1
    return low


def bernoulli_thresholds(p: float) -> tuple[int, int, bool]:
    """How legacy ``binomial(1, p)`` turns one double's 53-bit integer ``k`` into 0/1.

    numpy's C draws ``U = k / 2**53`` and runs its inversion algorithm on
    ``p' = min(p, 1 - p)`` (returning ``1 - X`` when ``p > 0.5``), in double
    precision: ``qn = exp(1 * log(1 - p'))``; ``X = 1`` if ``U > qn``; then,
    with ``px = p' * qn / q``, it restarts on a fresh double if
    ``U - qn > px``, which rounding allows only for U within ~2**-50 of 1.
    Both tests are monotone in ``k``, so they are integer thresholds, found
    once per ``p`` (the restart one by bisection on the C expression).

    Returns:
        ``(above, restart, flipped)``: ``X = 1`` iff ``k > above``; the draw
        restarts iff ``k >= restart`` (``2**53``: never); the value is
        ``1 - X`` iff ``flipped``.
    """
    flipped = p > 0.5
    small = 1.0 - p if flipped else p
    q = 1.0 - small
    qn = math.exp(1.0 * math.log(q))  # libm's, which numpy's C calls too
    px = ((1.0 * small) * qn) / (1.0 * q)
    above = min(math.floor(qn * 2.0**53), 2**53)  # U > qn <=> k > floor(qn 2**53)
    restart = _least_true(
        lambda k: k * _TWO_TO_MINUS_53 - qn > px, min(above + 1, 2**53), 2**53
    )
    return above, restart, flipped


def _blocks(
    stream: _Stream, starts: np.ndarray, width: int, every: int = 1
) -> np.ndarray:
    """Words ``starts[l, b] + every * i``, i < width, of lane l: [L, B, width].

    Rows of a strided view of the words, so numpy copies whole rows.
    """
    lanes, count = stream.words.shape
    span = every * (width - 1) + 1
    stream.exact &= np.all(starts + span <= count, axis=1)
    flat = stream.words.reshape(-1)
    itemsize = flat.itemsize
    rows = np.lib.stride_tricks.as_strided(
        flat,
        shape=(flat.size - span + 1, width),
        strides=(itemsize, every * itemsize),
        writeable=False,
    )
    offsets = np.minimum(starts, count - span) + (np.arange(lanes) * count)[:, None]
    return rows[offsets]


def _bernoulli_matrices(
    stream: _Stream,
    starts: np.ndarray,
    choices: np.ndarray,
    p: Sequence[float],
    num_nodes: int,
) -> np.ndarray:
    """Legacy ``binomial(1, p[choice], size=(N, N))`` of each lane and sample, bool.

    ``k > above`` is decided by the first word of each double alone unless
    ``k >> 26 == above >> 26`` (a 2**-27 chance per draw), so only the first
    words are read, and the second ones only for those ties.

    Args:
        stream: the lanes' words.
        starts: [L, B] the word index of each matrix's first double.
        choices: [L, B] the index in ``p`` of each sample's edge probability.
        p: the edge probabilities.
        num_nodes: N.

    Returns:
        [L, B, N, N] the 0/1 draws as bool.
    """
    table = np.array([bernoulli_thresholds(float(x)) for x in p], dtype=np.uint64)
    cells = num_nodes * num_nodes
    above, restart, flipped = (table[choices, i][..., None] for i in range(3))
    if np.any(table[:, 1] < 2**53):  # a p whose draws can restart (none of run.py's)
        integers = _pair_integers(_blocks(stream, starts, 2 * cells))
        stream.exact &= ~np.any(integers >= restart, axis=(1, 2))
        ones = integers > above
    else:
        high = above >> np.uint64(26)  # k > above: a >> 5 > high, or tied and b
        first = _blocks(stream, starts, cells, every=2)  # [L, B, N * N] words a
        ones = first >= (high + np.uint64(1)) << np.uint64(5)
        ties = np.nonzero((first >= high << np.uint64(5)) & ~ones)
        if ties[0].size:
            lane, sample, cell = ties
            second = stream.words[lane, starts[lane, sample] + 2 * cell + 1]
            low = above[lane, sample, 0] & np.uint64(2**26 - 1)
            ones[ties] = (second >> np.uint64(6)) > low
    edges = ones != flipped.astype(bool)
    return edges.reshape(*starts.shape, num_nodes, num_nodes)


def _words_needed(num_nodes: int, batch_size: int, weighted: bool) -> int:
    """Words one lane consumes in the usual case, with room for rejections."""
    per_graph = 2 * num_nodes * num_nodes * (2 if weighted else 1)
    return batch_size * (per_graph + 8) + 2 * _WINDOW


def draw_graphs(
    sampler: str,
    seeds: np.ndarray,
    num_nodes: int,
    batch_size: int,
    p: Sequence[float],
) -> Graphs:
    """The graphs ``sampler_class(..., seed=seed, length=N, p=p).next(B)`` draws.

    One lane per seed.  The small draws (each sample's edge probability and
    source) are replayed sample by sample, every lane at once; they fix
    where each matrix's words start, and the matrices are then read in one
    go.  dm-clrs's sampler calls, per sample: ``choice(p)``, ``binomial(1, p,
    (N, N))``, symmetrised when undirected; ``uniform(0, 1, (N, N))`` when
    weighted; ``choice(N)`` when there is a source.

    Args:
        sampler: a dm-clrs sampler class name in :data:`SAMPLER_KINDS`.
        seeds: [L] RandomState seeds of the samplers.
        num_nodes: N, 2 <= N <= :data:`MAX_NODES`.
        batch_size: B, samples per sampler.
        p: the sampler's edge probabilities (one chosen per sample).

    Raises:
        ValueError: if the sampler is not replayed or N is out of range.
    """
    if sampler not in SAMPLER_KINDS:
        raise ValueError(
            f"expected a sampler in {sorted(SAMPLER_KINDS)}, found {sampler!r}"
        )
    if not 2 <= num_nodes <= MAX_NODES:
        raise ValueError(f"expected 2 <= num_nodes <= {MAX_NODES}, found {num_nodes}")
    directed, weighted, with_source = SAMPLER_KINDS[sampler]
    matrix_words = 2 * num_nodes * num_nodes
    words = legacy_words(list(seeds), _words_needed(num_nodes, batch_size, weighted))
    stream = _Stream(words, np.zeros(len(words), np.int64), np.ones(len(words), bool))
    choices, edge_starts, weight_starts, sources = [], [], [], []
    for _ in range(batch_size):
        choices.append(_bounded(stream, len(p)))
        edge_starts.append(stream.used.copy())
        stream.advance(matrix_words)
        if weighted:
            weight_starts.append(stream.used.copy())
            stream.advance(matrix_words)
        if with_source:
            sources.append(_bounded(stream, num_nodes))
    edges = _bernoulli_matrices(
        stream, np.stack(edge_starts, 1), np.stack(choices, 1), p, num_nodes
    )
    if not directed:
        edges &= np.swapaxes(edges, -1, -2)  # mat *= mat.T (a copy: they overlap)
    weights = None
    if weighted:
        uniforms = words_to_doubles(
            _blocks(stream, np.stack(weight_starts, 1), matrix_words)
        ).reshape(edges.shape)  # uniform(0, 1) is 0 + 1 * U
        if not directed:
            uniforms = np.sqrt(uniforms * np.swapaxes(uniforms, -1, -2) + 1e-3)
        weights = edges * uniforms  # mat.astype(float) * weights
    return Graphs(
        edges=edges,
        weights=weights,
        sources=np.stack(sources, axis=1) if with_source else None,
        exact=stream.exact,
    )


def random_positions(
    seeds: np.ndarray, stream: int, batch_size: int, num_nodes: int
) -> np.ndarray:
    """dm-clrs ``process_random_pos`` for graphs: sorted uniforms, [L, B, N].

    ``RandomState([seed, stream]).uniform(size=(B, N))`` per lane, each row
    sorted (a graph's ``pos`` has one zero-delimited segment, the whole row).
    """
    words = legacy_words([[int(s), stream] for s in seeds], 2 * batch_size * num_nodes)
    uniforms = words_to_doubles(words).reshape(len(seeds), batch_size, num_nodes)
    return np.sort(uniforms, axis=-1)
