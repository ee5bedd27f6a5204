"""Every numeric constant of the compiler, with the inequality it must satisfy.

The compiler turns the *order* of a program's selection criteria into logit
magnitudes: criterion k must separate its candidates by at least a margin
plus everything the criteria after it can add (their *span*), so the first
criterion that differs decides, as in the interpreter.  :func:`derive_scales`
does that bookkeeping from the last criterion to the first; this module holds
the knobs it starts from.

Float facts behind the defaults (clrs-semantics.md §7.4): softmax gives the
top entry probability 1 - k e^{-gap} against k rivals; a selected id or
distance is off by at most that mass times the value range.  Two limits bound
the score logits ``lambda (d + A)`` of a Minimise criterion, one per dtype:

* float32 rounds a logit to ~1.2e-7 of its size, so ``lambda (d + A) <= 4e7``
  keeps that rounding (~4) well below the margin of 24;
* float64 rounds to ~2.2e-16 of it (negligible), and the binding limit is the
  1e9 adjacency mask dm-clrs adds to non-edges: every edge's logit must stay
  above every masked one by more than the margin, so the scores of one
  receiver, ``lambda (d + A)`` plus the smaller criteria, must span less than
  1e9.  ``lambda (d + A) <= 4.5e8`` leaves half the mask as that gap.

So float64 execution decides score gaps about 11x finer (4e8 / 3.6e7), not
1e9x: the mask, not the float, is its limit.  Distances themselves are held
to float32 rounding (~1e-7 relative) in float32 and to ~1e-16 in float64.
"""

from __future__ import annotations

import dataclasses

from nar_gap.tasks.defaults import HIDDEN_SIZE

# Compiled at the trained baselines' width by default, so faithfulness compares
# networks of one size.
DEFAULT_HIDDEN_SIZE = HIDDEN_SIZE

# Per dtype: the largest score logit lambda * (d + A) allowed, and the default
# one (see the module docstring for why each).
MAX_SCORE_LOGIT = {"float32": 4e7, "float64": 4.5e8}
SCORE_LOGIT_BUDGET = {"float32": 3.6e7, "float64": 4e8}
DTYPES = tuple(MAX_SCORE_LOGIT)


@dataclasses.dataclass(frozen=True)
class CompilerConfig:
    """Knobs of the compiler; every derived scale follows from them.

    Attributes:
      margin: G, the smallest logit gap between the selected sender and any
        other for ``nodes``-resolution criteria.  e^{-24} ~ 4e-11, so even
        1024 rivals leave a selected id within 4e-8 of exact (ids are 1/N
        apart).
      tie_margin: the gap used by ``ties``-resolution criteria (exact ties
        only).  e^{-10} ~ 5e-5: a tied rival k ids away shifts a stored id by
        5e-5 k/N, below half an id (1/(2N)) for k < 1e4.
      resolution_nodes: graphs up to this size get every margin in full.
        Larger graphs still run (no code path depends on the size); the
        margins of id comparisons shrink as ``resolution_nodes / N``.
      tie_nodes: ``ties`` criteria break every exact tie on graphs up to
        this size (and ties between ids at least ``N / tie_nodes`` apart on
        larger ones).  Kept small because its logit span costs distance
        resolution (see ``distance_resolution``).
      max_weight: the edge-weight range the constants are set for (CLRS
        samplers: <= 1).
      max_distance: the largest ``d_j`` a Minimise criterion's constants are
        set for.  ``CompiledModel.run`` compiles the program again, with both
        ranges fitted, for a graph beyond them (no fixed cap).
      distance_scale: lambda, logit units per unit of distance; None derives
        it as ``SCORE_LOGIT_BUDGET[dtype] / (max_distance + max_weight)``.
        It must satisfy ``lambda * (max_distance + max_weight) <=
        MAX_SCORE_LOGIT[dtype]`` (4e7 for float32: its rounding stays below
        the margin; 4.5e8 for float64: the 1e9 adjacency mask stays above
        every score).  Larger distances therefore cost distance resolution
        (see ``CompiledModel.scales``).
      dtype: ``"float32"`` (default) or ``"float64"``: the float the compiled
        network runs in.  float64 runs in JAX's x64 mode, scoped to the
        compiled model's own calls (trained models are untouched), with the
        graph's inputs and dm-clrs's reference kept in float64.
      pre_att_bias_nodes: None (default) compiles size-free models.  An
        integer compiles the paper's variant (BFS and Bellman-Ford): the
        self and lowest-id preferences live in the learned N x N
        pre-attention bias, which then fixes the largest graph.
    """

    margin: float = 24.0
    tie_margin: float = 10.0
    resolution_nodes: int = 1024
    tie_nodes: int = 8
    max_weight: float = 1.0
    max_distance: float = 8.0
    distance_scale: float | None = None
    pre_att_bias_nodes: int | None = None
    dtype: str = "float32"

    def __post_init__(self) -> None:
        problems = []
        for name in ("margin", "tie_margin", "max_weight", "max_distance"):
            if not getattr(self, name) > 0:
                problems.append(f"{name} must be > 0, got {getattr(self, name)}")
        for name in ("resolution_nodes", "tie_nodes"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.dtype not in DTYPES:
            raise ValueError(
                f"invalid CompilerConfig: dtype must be one of {', '.join(DTYPES)}, "
                f"got {self.dtype!r}"
            )
        budget = self.score_scale * (self.max_distance + self.max_weight)
        limit = MAX_SCORE_LOGIT[self.dtype]
        if not 0 < budget <= limit:
            problems.append(
                "distance_scale * (max_distance + max_weight) must be in "
                f"(0, {limit:.2g}] for {self.dtype} score logits, got {budget:.3g}"
            )
        if self.pre_att_bias_nodes is not None and self.pre_att_bias_nodes < 1:
            problems.append("pre_att_bias_nodes must be None or >= 1")
        if problems:
            raise ValueError("invalid CompilerConfig: " + "; ".join(problems))

    def with_margins_times(self, factor: float) -> CompilerConfig:
        """This compiler with ``margin`` and ``tie_margin`` times ``factor``.

        The margins set the logit gaps the compiled attention and decoders
        keep, and with them the size of the compiled weights (a control for
        what depends on that size: the loss landscape's sharpness).
        """
        return dataclasses.replace(
            self, margin=self.margin * factor, tie_margin=self.tie_margin * factor
        )

    @property
    def score_scale(self) -> float:
        """lambda: ``distance_scale``, or derived from the logit budget."""
        if self.distance_scale is not None:
            return float(self.distance_scale)
        return SCORE_LOGIT_BUDGET[self.dtype] / (self.max_distance + self.max_weight)

    @property
    def pointer_scale(self) -> float:
        """The pointer decoders' logit scale.

        Decoder logits are ``-scale |x_i - pos_j|``: neighbouring ids (1/N
        apart) differ by ``margin`` up to ``resolution_nodes``.
        """
        return self.margin * self.resolution_nodes

    @property
    def mask_scale(self) -> float:
        """Mask logits ``scale (x - 1/2)``: sigmoid is 1 - e^{-margin} at 0/1."""
        return 2.0 * self.margin
