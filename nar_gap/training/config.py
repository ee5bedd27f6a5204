"""What determines a training run: :class:`TrainConfig`, the paper's as defaults."""

from __future__ import annotations

import dataclasses
from typing import Any

from nar_gap.model.config import NetworkConfig
from nar_gap.model.seeds import SEED_STRATEGIES
from nar_gap.programs.registry import SIZE_FREE_PROGRAMS
from nar_gap.system import files
from nar_gap.tasks.buckets import largest_padded_nodes
from nar_gap.tasks.defaults import (
    BATCH_SIZE,
    GRAD_CLIP_NORM,
    LEARNING_RATE,
    TRAIN_LENGTHS,
    TRAIN_P,
    TRAIN_STEPS,
)
from nar_gap.tasks.families import FAMILIES
from nar_gap.tasks.mixing import unknown_families
from nar_gap.tasks.sampling import step_size

OPTIMIZERS = ("adam", "sgd")

# Which validated parameters a run keeps (TrainConfig.selection).
SELECTION_RULES = ("first_best", "last_best", "final")

# How the supervision weights reach zero (TrainConfig.supervision_schedule).
SUPERVISION_SCHEDULES = ("linear", "step")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a training run; defaults are the paper's.

    Attributes:
      network: the architecture and hint-loop options.
      seeds: one model per seed, trained together.
      steps: optimiser steps per seed (paper: 10 000).
      batch_size: samples per step and seed (paper: 32).
      learning_rate: the optimiser's step size (paper: Adam, 1e-3).
      optimizer: ``"adam"`` (the paper's, dm-clrs's) or ``"sgd"`` (plain
        gradient steps after the same clipping).  SGD is a control for
        training on from compiled weights: Adam moves every parameter by about
        ``learning_rate`` per step whatever its scale, SGD by its gradient.
      grad_clip_norm: global-norm clipping (paper: 1.0; 0 disables).
      train_lengths: graph sizes cycled one batch each (paper: 4, 7, 11, 13, 16).
      edge_probabilities: Erdős–Rényi p grid for training (run.py's 0.1..0.9).
      random_pos: randomise ``pos`` in training (run.py: True).
      train_families: graph families (:data:`nar_gap.tasks.families.FAMILIES`:
        ``path``, ``tree``, ``grid``, ...) mixed into every training batch at
        its size, in turn (:mod:`nar_gap.tasks.mixing`); empty (default):
        dm-clrs's Erdős–Rényi graphs only, as CLRS trains.  Paths ask a
        decoder to keep a node's pointer for many steps; CLRS's graphs rarely
        do (notebook 07, section 6b).
      family_share: the share of each batch's graphs drawn from
        ``train_families`` (at least one graph when > 0); needs families,
        and families need it.
      l1_weight: weight of the L1 penalty Σ|θ| (the paper's minimal models).
      attention_weight: weight of the attention-supervision term
        (:func:`~nar_gap.training.supervision.attention_kl`): every step's
        attention pulled towards the compiled model's on the same graph.  0
        (default) is plain CLRS training; needs a compiled program (bfs,
        bellman_ford).
      state_weight: weight of hidden-state supervision
        (:func:`~nar_gap.training.supervision.state_mse`): the network's
        state probe (``network.state_probe_size``, set by
        :func:`~nar_gap.training.supervision.with_state_probe`) trained to
        read the compiled model's variables off every step's hidden state.
      supervision_until: the attention and state weights reach zero at this
        step and stay zero after it (:meth:`supervision_scale`), so the final
        parameters are trained on the task alone; 0 (default) keeps them
        constant.
      supervision_schedule: how they get there: ``"linear"`` (default)
        decays from the full weight at step 0; ``"step"`` keeps the full
        weight until ``supervision_until`` and drops it to zero there (a
        supervised run, then trained on without supervision: its first
        ``supervision_until`` steps are those of the constant-weight run).
      curriculum_steps: a length curriculum: before this step only the
        smallest of ``train_lengths`` are cycled, one more size joining at
        each of ``len(train_lengths)`` equal stages (:meth:`lengths_at`);
        0 (default) cycles every size from the start, as CLRS does.
      eval_every: validation period in steps (0: only at the end).
      checkpoint_every: checkpoint period in steps (0: only at the end).
      val_num_nodes, test_num_nodes: sizes of the evaluation splits; at 16 and
        64 these are exactly CLRS-30's val and test sets.
      eval_graphs: how many of each evaluation split's graphs validation and
        the final test score (0, the default: all of them, as CLRS does).
        A dry run (:func:`nar_gap.paper.experiments.profiles.dry_run`) keeps a few:
        the same programs and trace lengths on a smaller batch axis.
      node_buckets: graph sizes are padded up to the smallest bucket that fits
        (sizes above every bucket stay as they are; empty: no node padding, one
        compile per size).  Padded nodes are masked out exactly, so this trades
        some compute on small graphs for fewer compiles: with the paper's sizes
        4..16, (8, 16) compiles about a third as often as no buckets.
      time_buckets: trace lengths are padded up to the smallest bucket that
        fits; lengths above every bucket (all of them when empty) go up the
        ladder 2, 3, 4, 6, 8, 12, 16, ... .  Padded steps are masked exactly.
        Few coarse buckets mean few compiles (each costs ~10 s on a CPU) but
        more padded compute: right for short runs and tests.
      shape_buckets: ``(nodes, steps)`` shapes a step's batches are padded to:
        the cheapest that holds them (:func:`~nar_gap.tasks.buckets.bucket_shape`);
        a batch that none holds falls back to ``node_buckets`` and
        ``time_buckets``.  The default is the shape policy for the paper's
        training sizes (4..16) with BFS and Bellman-Ford, whose traces at
        N <= 16 have at most N steps: graphs of 4 and 7 nodes (at most 7 steps
        in 4 000 sampled batches) fit ``(8, 8)``, larger ones ``(16, 12)``
        (9 to 12 steps are the usual longest of 8 seeds' batches) or, rarely,
        ``(16, 16)``.  So a paper-configuration run compiles its train step at
        most 3 times; the ladder alone compiled it 6 times.
      seed_strategy: how one step runs the seeds
        (:func:`~nar_gap.model.seeds.seed_strategy_for`): ``"vmap"`` (one
        batched program), ``"map"`` (``lax.map``: one seed after another
        inside one compiled step), or ``"auto"``, the measured best for the
        backend.  Only the execution changes (the numbers agree to float32
        reassociation), so a run may resume under another strategy.
      selection: which parameters a seed keeps, its *selected* parameters
        (:func:`~nar_gap.training.loop.improved` decides, at every
        validation): ``"first_best"`` (default) keeps the earliest step with
        the best validation score, a later step must beat it strictly (``>``);
        ``"last_best"`` lets a later step that ties it win (``>=``);
        ``"final"`` keeps the last step's parameters whatever validation
        says.  ``first_best`` is CLRS's rule (dm-clrs's run.py saves on
        ``val > best``) and so the paper's protocol: every run made before
        this field existed used it.  Where validation saturates (BFS at 1.0
        from the first evaluation on) it selects an early step, so a
        "10 000-step model" may be a step-500 model; the other two rules ask
        what longer training gives.  Validation runs at step 0 too (a fresh
        start, before the first optimiser step), a candidate like any other:
        under ``first_best`` an untrained model is kept only if no later step
        beats it.
    """

    network: NetworkConfig
    seeds: tuple[int, ...] = (0,)
    steps: int = TRAIN_STEPS
    batch_size: int = BATCH_SIZE
    learning_rate: float = LEARNING_RATE
    optimizer: str = "adam"
    grad_clip_norm: float = GRAD_CLIP_NORM
    train_lengths: tuple[int, ...] = TRAIN_LENGTHS
    edge_probabilities: tuple[float, ...] = TRAIN_P
    random_pos: bool = True
    train_families: tuple[str, ...] = ()
    family_share: float = 0.0
    l1_weight: float = 0.0
    attention_weight: float = 0.0
    state_weight: float = 0.0
    supervision_until: int = 0
    supervision_schedule: str = "linear"
    curriculum_steps: int = 0
    eval_every: int = 500
    checkpoint_every: int = 500
    val_num_nodes: int = 16
    test_num_nodes: int = 64
    eval_graphs: int = 0
    node_buckets: tuple[int, ...] = (8, 16)
    time_buckets: tuple[int, ...] = ()
    shape_buckets: tuple[tuple[int, int], ...] = ((8, 8), (16, 12), (16, 16))
    seed_strategy: str = "auto"
    selection: str = "first_best"

    def __post_init__(self) -> None:
        problems = [
            *self._seed_problems(),
            *self._count_problems(),
            *self._optimizer_problems(),
            *self._supervision_problems(),
            *self._padding_problems(),
            *self._choice_problems(),
            *self._shape_problems(),
            *self._family_problems(),
        ]
        if problems:
            raise ValueError("invalid TrainConfig: " + "; ".join(problems))

    def _seed_problems(self) -> list[str]:
        problems = []
        if not self.seeds:
            problems.append("at least one seed is needed")
        if len(set(self.seeds)) != len(self.seeds):
            problems.append(f"seeds must be distinct, got {self.seeds}")
        if any(not 0 <= s < 2**31 for s in self.seeds):
            problems.append("seeds must be in [0, 2**31)")
        return problems

    def _count_problems(self) -> list[str]:
        """Steps, periods and sizes below their least meaningful value."""
        problems = []
        for label, value, low in (
            ("steps", self.steps, 0),
            ("batch_size", self.batch_size, 1),
            ("eval_every", self.eval_every, 0),
            ("checkpoint_every", self.checkpoint_every, 0),
            ("supervision_until", self.supervision_until, 0),
            ("curriculum_steps", self.curriculum_steps, 0),
            ("val_num_nodes", self.val_num_nodes, 2),
            ("test_num_nodes", self.test_num_nodes, 2),
            ("eval_graphs", self.eval_graphs, 0),
        ):
            if value < low:
                problems.append(f"{label} must be >= {low}, got {value}")
        if not self.train_lengths or min(self.train_lengths) < 2:
            problems.append(
                f"train_lengths must be sizes >= 2, got {self.train_lengths}"
            )
        return problems

    def _optimizer_problems(self) -> list[str]:
        problems = []
        if self.optimizer not in OPTIMIZERS:
            problems.append(
                f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}"
            )
        if not self.learning_rate > 0:
            problems.append(f"learning_rate must be > 0, got {self.learning_rate}")
        if self.grad_clip_norm < 0 or self.l1_weight < 0:
            problems.append("grad_clip_norm and l1_weight must be >= 0")
        return problems

    def _supervision_problems(self) -> list[str]:
        """Supervision needs a size-free compiled program (and a state probe)."""
        problems = []
        for name in ("attention_weight", "state_weight"):
            weight = getattr(self, name)
            if weight < 0:
                problems.append(f"{name} must be >= 0, got {weight}")
            if weight > 0 and self.network.algorithm not in SIZE_FREE_PROGRAMS:
                problems.append(
                    f"{name} needs a compiled {self.network.algorithm} that runs "
                    "every graph size; such programs exist for "
                    f"{', '.join(SIZE_FREE_PROGRAMS)}"
                )
        if self.state_weight > 0 and not self.network.state_probe_size:
            problems.append(
                "state_weight needs a state probe: build the network with "
                "nar_gap.training.supervision.with_state_probe"
            )
        return problems

    def _family_problems(self) -> list[str]:
        """Known families, a share in [0, 1], and the two set together."""
        problems = []
        unknown = unknown_families(self.train_families)
        if unknown:
            problems.append(
                f"unknown train_families {unknown}; known: {', '.join(FAMILIES)}"
            )
        if not 0 <= self.family_share <= 1:
            problems.append(f"family_share must be in [0, 1], got {self.family_share}")
        if bool(self.train_families) != (self.family_share > 0):
            problems.append(
                "train_families and family_share > 0 go together, got "
                f"{self.train_families} and {self.family_share}"
            )
        return problems

    def _padding_problems(self) -> list[str]:
        problems = []
        if any(b < 2 for b in self.node_buckets):
            problems.append(f"node_buckets must be sizes >= 2, got {self.node_buckets}")
        if any(b < 1 for b in self.time_buckets):
            problems.append(f"time_buckets must be >= 1, got {self.time_buckets}")
        return problems

    def _choice_problems(self) -> list[str]:
        """Names that must be one of a few: strategy, schedule, selection rule."""
        problems = []
        if self.seed_strategy not in SEED_STRATEGIES:
            problems.append(
                f"seed_strategy must be one of {SEED_STRATEGIES}, "
                f"got {self.seed_strategy!r}"
            )
        if self.supervision_schedule not in SUPERVISION_SCHEDULES:
            problems.append(
                f"supervision_schedule must be one of {SUPERVISION_SCHEDULES}, "
                f"got {self.supervision_schedule!r}"
            )
        if self.selection not in SELECTION_RULES:
            problems.append(
                f"selection must be one of {SELECTION_RULES}, got {self.selection!r}"
            )
        return problems

    def _shape_problems(self) -> list[str]:
        """Shape buckets, and the sizes a pre-attention bias of fixed N can run."""
        problems = []
        if any(len(b) != 2 or b[0] < 2 or b[1] < 1 for b in self.shape_buckets):
            problems.append(
                f"shape_buckets must be (nodes >= 2, steps >= 1) pairs, "
                f"got {self.shape_buckets}"
            )
        net = self.network
        if net.use_pre_att_bias:
            sizes = {
                "training graphs (train_lengths)": max(self._padded_sizes()),
                "validation graphs (val_num_nodes)": self.val_num_nodes,
                "test graphs (test_num_nodes)": self.test_num_nodes,
            }
            too_big = [
                f"{what} of {n}"
                for what, n in sizes.items()
                if n > net.pre_att_bias_nodes
            ]
            if too_big:
                problems.append(
                    f"use_pre_att_bias with pre_att_bias_nodes="
                    f"{net.pre_att_bias_nodes} "
                    f"cannot run on {', '.join(too_big)} nodes: its N x N bias fixes "
                    f"the size, so train, validate and test at "
                    f"{net.pre_att_bias_nodes} nodes or below"
                )
        return problems

    def supervision_scale(self, step: int) -> float:
        """The factor on the supervision weights at ``step`` (0-based).

        1 throughout without ``supervision_until``; with it, ``1 - step /
        until`` down to 0 at ``until`` and after (``"linear"``), or 1 before
        ``until`` and 0 from it on (``"step"``).
        """
        if not self.supervision_until:
            return 1.0
        if self.supervision_schedule == "step":
            return 1.0 if step < self.supervision_until else 0.0
        return max(0.0, 1.0 - step / self.supervision_until)

    def lengths_at(self, step: int) -> tuple[int, ...]:
        """The training sizes cycled at ``step``: the curriculum's stage.

        Stage ``k`` of ``len(train_lengths)`` (equal spans of
        ``curriculum_steps``) uses the ``k + 1`` smallest sizes; from
        ``curriculum_steps`` on, all of them.
        """
        sizes = tuple(sorted(self.train_lengths))
        if not self.curriculum_steps or step >= self.curriculum_steps:
            return self.train_lengths
        stage = step * len(sizes) // self.curriculum_steps
        return sizes[: stage + 1]

    def size_at(self, step: int) -> int:
        """The graph size step ``step`` draws, of :meth:`lengths_at`'s sizes."""
        return step_size(self.lengths_at(step), step)

    def usable_shape_buckets(self) -> tuple[tuple[int, int], ...]:
        """The shape buckets this network can run.

        With the paper's pre-attention bias, none wider than its
        ``pre_att_bias_nodes``: the bias fixes the graph size.
        """
        net = self.network
        if not net.use_pre_att_bias:
            return self.shape_buckets
        return tuple(b for b in self.shape_buckets if b[0] <= net.pre_att_bias_nodes)

    def _padded_sizes(self) -> list[int]:
        """The largest padded node count of each training size (any step count)."""
        return [
            largest_padded_nodes(n, self.usable_shape_buckets(), self.node_buckets)
            for n in self.train_lengths
        ]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (for ``config.json`` and results sidecars)."""
        return files.to_jsonable(dataclasses.asdict(self))

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> TrainConfig:
        """The inverse of :meth:`to_dict` (a field it lacks takes its default)."""
        fields = dict(payload)
        fields["network"] = NetworkConfig(**fields["network"])
        fields["shape_buckets"] = tuple(tuple(pair) for pair in fields["shape_buckets"])
        for name in (
            "seeds",
            "train_lengths",
            "edge_probabilities",
            "train_families",
            "node_buckets",
            "time_buckets",
        ):
            if name in fields:
                fields[name] = tuple(fields[name])
        return cls(**fields)
