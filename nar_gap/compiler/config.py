"""Every numeric constant of the compiler, with the inequality it must satisfy.

The compiler turns the *order* of a program's selection criteria into logit
magnitudes: criterion k must separate its candidates by at least a margin
plus everything the criteria after it can add (their *span*), so the first
criterion that differs decides, as in the interpreter.  :func:`derive_scales`
does that bookkeeping from the last criterion to the first; this module holds
the knobs it starts from.

Float32 facts behind the defaults (clrs-semantics.md §7.4): softmax gives the
top entry probability 1 - k e^{-gap} against k rivals; a selected id or
distance is off by at most that mass times the value range.  Logits stay
below ~1e8, far from the 1e9 adjacency mask, and their float32 rounding
(about 1e-7 of their magnitude) stays well below every margin.
"""

from __future__ import annotations

import dataclasses

DEFAULT_HIDDEN_SIZE = 128  # the CLRS benchmark's size, used for faithfulness

# Largest score logit lambda * (d + A) allowed, and the default one: float32
# rounds it to ~4 (ulp at 3.6e7), far below the margin of 24.
MAX_SCORE_LOGIT = 4e7
SCORE_LOGIT_BUDGET = 3.6e7


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
        it as ``SCORE_LOGIT_BUDGET / (max_distance + max_weight)``.  It must
        satisfy ``lambda * (max_distance + max_weight) <= 4e7`` so float32
        rounding of the score logits (1.2e-7 of their size, a few times)
        stays well below the margin.  Larger distances therefore cost
        distance resolution (see ``CompiledModel.scales``).
      pre_att_bias_nodes: None (default) compiles size-free models.  An
        integer compiles the paper's variant: self-preference and the
        lowest-id preference live in the learned N x N pre-attention bias,
        which then fixes the largest graph (BFS only).
    """

    margin: float = 24.0
    tie_margin: float = 10.0
    resolution_nodes: int = 1024
    tie_nodes: int = 8
    max_weight: float = 1.0
    max_distance: float = 8.0
    distance_scale: float | None = None
    pre_att_bias_nodes: int | None = None

    def __post_init__(self) -> None:
        problems = []
        for name in ("margin", "tie_margin", "max_weight", "max_distance"):
            if not getattr(self, name) > 0:
                problems.append(f"{name} must be > 0, got {getattr(self, name)}")
        for name in ("resolution_nodes", "tie_nodes"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be >= 1, got {getattr(self, name)}")
        budget = self.score_scale * (self.max_distance + self.max_weight)
        if not 0 < budget <= MAX_SCORE_LOGIT:
            problems.append(
                "distance_scale * (max_distance + max_weight) must be in (0, 4e7] "
                f"for float32 score logits, got {budget:.3g}"
            )
        if self.pre_att_bias_nodes is not None and self.pre_att_bias_nodes < 1:
            problems.append("pre_att_bias_nodes must be None or >= 1")
        if problems:
            raise ValueError("invalid CompilerConfig: " + "; ".join(problems))

    @property
    def score_scale(self) -> float:
        """lambda: ``distance_scale``, or derived from the logit budget."""
        if self.distance_scale is not None:
            return float(self.distance_scale)
        return SCORE_LOGIT_BUDGET / (self.max_distance + self.max_weight)

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
