"""Many parameter sets of one architecture, measured together against a reference.

:class:`Models` is the stack (a training run, runs trained apart, compiled
or imported models); :func:`measure_models` runs
:func:`~nar_gap.analysis.faithfulness.measure_one` over it as one vmapped,
jitted computation in chunks and returns a :class:`SeedEvaluation`.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from nar_gap.analysis.faithfulness import (
    DEFAULT_MARGINS,
    GAP_MEASURES,
    Margins,
    calibrated_measures,
    external_steps,
    head_averaged,
    measure_one,
    self_attention,
    uniform_attention,
    uniform_bins,
    uniform_timescale,
)
from nar_gap.compiler.compiled_model import CompiledModel
from nar_gap.model.activations import teacher_forced
from nar_gap.model.config import NetworkConfig
from nar_gap.model.model import Model
from nar_gap.model.seeds import (
    forward,
    in_seed_chunks,
    init_stacked,
    over_seeds,
    seed_strategy_for,
    stack_trees,
    unstack_tree,
)
from nar_gap.tasks.batch import Batch, graph_range
from nar_gap.training.run_dir import TrainResult, load_run

__all__ = [
    "Models",
    "SeedEvaluation",
    "measure_models",
    "reference_attention",
    "selected_step",
]


def selected_step(metrics: Mapping[str, Any]) -> int:
    """The training step whose parameters a seed's run kept (model selection).

    ``metrics`` is one seed's row of a run's metrics.  How long a seed
    effectively trained is a confounder of Table 1, so the study carries it
    per seed.
    """
    if "selected_step" not in metrics:
        raise KeyError(
            f"a seed's metrics record no selected_step: keys {sorted(metrics)}"
        )
    return int(metrics["selected_step"])


@functools.lru_cache(maxsize=16)
def _seed_evaluator(
    config: NetworkConfig,
    margins: Margins,
    with_reference: bool,
    strategy: str,
    forced: bool = False,
):
    def one(params, batch, reference):
        return measure_one(
            config,
            params,
            batch,
            reference if with_reference else None,
            margins,
            forced,
        )

    return jax.jit(over_seeds(one, strategy))


@dataclasses.dataclass(frozen=True)
class Models:
    """Many parameter sets of one architecture, stacked on a leading seed axis.

    Attributes:
      config: the architecture shared by all.
      params: the parameter tree with a leading axis of ``len(seeds)``.
      seeds: one label per parameter set (training seeds, or any integers).
      source: where they came from, for results files (``trained``, ``compiled``...).
      selected_steps: per seed, the training step its parameters come from
        (:func:`selected_step`); None when unknown (compiled or imported
        models).
    """

    config: NetworkConfig
    params: Any
    seeds: tuple[int, ...]
    source: str = "trained"
    selected_steps: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        leading = {x.shape[0] for x in jax.tree_util.tree_leaves(self.params)}
        if leading != {len(self.seeds)}:
            raise ValueError(
                f"Models: every parameter needs a leading axis of {len(self.seeds)} "
                f"(one per seed), found leading sizes {sorted(leading)}"
            )
        if self.selected_steps is not None and len(self.selected_steps) != len(
            self.seeds
        ):
            raise ValueError(
                f"Models: {len(self.selected_steps)} selected steps for "
                f"{len(self.seeds)} seeds"
            )

    @classmethod
    def from_run(cls, run: TrainResult | str | os.PathLike) -> Models:
        """From :func:`nar_gap.train`'s result, or a run directory.

        Each seed's :func:`selected_step` comes from the run's metrics.  The
        parameters are the result's (a directory: its selected ones).
        """
        if isinstance(run, str | os.PathLike):
            run = load_run(run)
        return cls(
            run.config.network,
            run.params,
            tuple(run.config.seeds),
            selected_steps=tuple(selected_step(m) for m in run.metrics),
        )

    @classmethod
    def from_runs(cls, runs: Sequence[Any]) -> Models:
        """Join runs of one architecture trained apart (e.g. seed groups per job).

        Raises:
          ValueError: the runs differ in architecture or repeat a seed.
        """
        parts = [cls.from_run(run) for run in runs]
        if not parts:
            raise ValueError("Models.from_runs needs at least one run")
        if len({p.config for p in parts}) != 1:
            raise ValueError(
                "Models.from_runs: the runs have different NetworkConfigs; "
                "compare one architecture at a time"
            )
        seeds = tuple(s for p in parts for s in p.seeds)
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"Models.from_runs: repeated seeds in {seeds}")
        params = jax.tree_util.tree_map(
            lambda *xs: np.concatenate([np.asarray(x) for x in xs]),
            *[p.params for p in parts],
        )
        steps = [p.selected_steps for p in parts]
        selected = None if None in steps else tuple(s for p in steps for s in p)
        return cls(parts[0].config, params, seeds, selected_steps=selected)

    @classmethod
    def from_models(
        cls,
        models: Sequence[Model],
        seeds: Sequence[int] | None = None,
        source: str = "given",
    ) -> Models:
        """Stack single models (compiled, ``from_clrs``-imported, ...) of one config."""
        if not models:
            raise ValueError("Models.from_models needs at least one model")
        configs = {m.config for m in models}
        if len(configs) != 1:
            raise ValueError(
                "Models.from_models: all models must share one NetworkConfig "
                f"(found {len(configs)}); evaluate different architectures apart"
            )
        params = stack_trees([m.params for m in models])
        labels = tuple(range(len(models))) if seeds is None else tuple(seeds)
        return cls(models[0].config, params, labels, source)

    def __len__(self) -> int:
        return len(self.seeds)

    def model(self, index: int) -> Model:
        """The ``index``-th parameter set as a :class:`Model` of ``config``.

        A plain :class:`Model`: the default matmul precision, also for a stack
        that holds a compiled network (its own object keeps ``highest``).
        """
        return Model(self.config, unstack_tree(self.params, index))

    def each(self) -> list[Model]:
        """Every parameter set as a :class:`Model`, in ``seeds``' order."""
        return [self.model(i) for i in range(len(self.seeds))]


def relative_drift(stacked: Any, centre: Any) -> np.ndarray:
    """``[K]``: ``‖θ_k − θ_c‖₂ / ‖θ_c‖₂`` over all parameters of each seed.

    Appendix D.8's drift: how far each seed of ``stacked`` (a leading seed
    axis) moved from one shared ``centre``, relative to the centre's norm.
    """
    diffs = jax.tree_util.tree_map(
        lambda s, c: np.sum(
            (np.asarray(s, np.float64) - np.asarray(c, np.float64)[None]) ** 2,
            axis=tuple(range(1, np.ndim(s))),
        ),
        stacked,
        centre,
    )
    norm = sum(
        float(np.sum(np.asarray(c, np.float64) ** 2))
        for c in jax.tree_util.tree_leaves(centre)
    )
    total = sum(jax.tree_util.tree_leaves(diffs))
    return np.sqrt(total / max(norm, 1e-30))


def parameter_drift(models: Models, centres: Models) -> np.ndarray:
    """``[K]``: :func:`relative_drift` of each seed from its own centre.

    :func:`relative_drift` measures every seed from one shared centre (the
    compiled model in D.8); here each trained seed is measured from its own
    earlier parameters, so a model trained on is compared with where it
    started.
    """
    if models.seeds != centres.seeds or models.config != centres.config:
        raise ValueError(
            "parameter_drift: models and centres must be the same seeds of one "
            f"architecture, found seeds {models.seeds} and {centres.seeds}"
        )
    return np.array(
        [
            relative_drift(
                jax.tree_util.tree_map(
                    lambda x, k=k: np.asarray(x)[k : k + 1], models.params
                ),
                unstack_tree(centres.params, k),
            )[0]
            for k in range(len(models.seeds))
        ]
    )


@dataclasses.dataclass(frozen=True)
class SeedEvaluation:
    """Per-seed measures of :class:`Models` on one batch (numpy, seed axis first).

    Attributes:
      seeds: the seed labels.
      scalars: ``{name: [K]}``: ``accuracy``, ``external``, ``external_strict``,
        ``external_<hint>``, ``external_<hint>_strict`` and ``internal``.
      series: ``{name: [K, S]}``: ``internal_along_time``,
        ``external_<hint>_along_time``, and ``{name: [K, bins]}``
        ``external_<hint>_uniform`` (the normalised timescale).
      attention: ``[K, S, B, N, N]`` head-averaged attention of every seed.
      lengths: ``[B]`` hint lengths of the batch.
    """

    seeds: tuple[int, ...]
    scalars: dict[str, np.ndarray]
    series: dict[str, np.ndarray]
    attention: np.ndarray
    lengths: np.ndarray


def reference_attention(model: Model, batch: Batch, forced: bool = False) -> np.ndarray:
    """The head-averaged attention ``[S, B, N, N]`` of one model on ``batch``.

    ``forced``: teacher-forced on the true trace (:func:`~nar_gap.model.
    activations.teacher_forced`), for the teacher-forced variant of Eq. 24.
    """
    if not forced:
        return np.asarray(head_averaged(model.apply(batch).attention))
    run = forward(teacher_forced(model.config), repred=False, precision=model.precision)
    return np.asarray(head_averaged(run(model.params, batch).attention))


def measure_models(
    models: Models,
    batch: Batch,
    reference: np.ndarray | None = None,
    margins: Margins = DEFAULT_MARGINS,
    chunk: int = 8,
    strategy: str = "auto",
    forced: bool = False,
) -> SeedEvaluation:
    """Every seed's accuracy, external and internal faithfulness on ``batch``.

    Seeds run ``chunk`` at a time as one jitted call (``strategy`` as in
    :func:`~nar_gap.model.seeds.seed_strategy_for`: ``lax.map`` on a CPU,
    vmapped on accelerators; a Python loop runs over chunks only, to bound
    memory on large graphs).  ``reference`` is :func:`reference_attention`
    of the compiled model on the same batch.  ``forced``: every model
    teacher-forced on the true trace (give a ``reference`` computed the same
    way, ``reference_attention(..., forced=True)``).
    """
    evaluator = _seed_evaluator(
        models.config,
        margins,
        reference is not None,
        seed_strategy_for(strategy),
        forced,
    )
    ref = jnp.zeros(()) if reference is None else jnp.asarray(reference)
    joined = in_seed_chunks(
        lambda part: evaluator(part, batch, ref), models.params, chunk
    )
    attention = joined.pop("attention")
    valid = np.asarray(external_steps(batch.lengths, attention.shape[1]))
    bins = uniform_bins(valid)
    scalars, series = {}, {}
    for name, values in joined.items():
        if name.endswith("_steps"):
            hint = name[: -len("_steps")]
            series[f"{hint}_uniform"] = np.stack(
                [uniform_timescale(v, valid, bins) for v in values]
            )
        elif values.ndim == 1:
            scalars[name] = values.astype(np.float64)
        else:
            series[name] = values.astype(np.float64)
    return SeedEvaluation(
        seeds=models.seeds,
        scalars=scalars,
        series=series,
        attention=attention,
        lengths=np.asarray(batch.lengths),
    )


AGAINST_COMPILED = ("accuracy", "internal", "argmax_agreement")
"""What :func:`measure_against_compiled` gives per seed."""


def measure_against_compiled(
    models: Models,
    batch: Batch,
    compiled: CompiledModel,
    graphs_per_part: int | None = None,
    refit: bool = False,
) -> dict[str, np.ndarray]:
    """``{measure: [K]}``: each seed's accuracy, internal distance, agreement.

    Accuracy is the CLRS score of the output; internal distance (Eq. 24)
    and argmax agreement compare each seed's attention with ``compiled``'s
    on the same graphs, fitted to their range (:meth:`~nar_gap.compiler.
    compiled_model.CompiledModel.fitted`), so that graphs where accuracy
    falls can say whether the attention left the compiled mechanism there.
    ``refit``: ``models`` is the compiled model itself, fitted to each
    part's range like the reference.  Large graphs are measured in parts
    (the edge tensors of 1024 nodes are half a gigabyte per graph and
    feature; by default a part holds 4096 nodes: the whole batch up to
    N = 128, 4 graphs of N = 1 024): the mean over parts is weighted by
    their graphs, exact for accuracy (every part has the batch's N) and for
    the other two where the batch is one part.
    """
    per_part = graphs_per_part or max(1, 4096 // batch.num_nodes)
    total = {m: np.zeros(len(models)) for m in AGAINST_COMPILED}
    for start in range(0, batch.batch_size, per_part):
        part = graph_range(batch, start, start + per_part)
        own = compiled.fitted(part)
        reference = reference_attention(own, part)
        measured = (
            Models.from_models([own], seeds=models.seeds, source="compiled")
            if refit
            else models
        )
        scalars = measure_models(measured, part, reference, chunk=1).scalars
        for m in AGAINST_COMPILED:
            total[m] += np.asarray(scalars[m], np.float64) * part.batch_size
    return {m: v / batch.batch_size for m, v in total.items()}


RANDOM_INIT_SEEDS = (10_000, 10_001, 10_002, 10_003)
"""Seeds of the random-init reference point and probe floors: not training seeds."""


def reference_points(
    models: Models, ref_att: np.ndarray, batch: Batch, chunk: int = 8
) -> list[dict[str, Any]]:
    """Each gap measure for attention nobody trained, on the same graphs.

    Without them a reader cannot tell what a distance of 0.75 means.  Rows:
    ``compiled`` (the reference against itself: 0 and agreement 1),
    ``uniform neighbourhood`` (every receiver spreads its attention evenly
    over its neighbours and itself), ``self only``, and ``random init`` (the
    trained architecture at initialisation, mean over
    :data:`RANDOM_INIT_SEEDS`).  The compiled model after further training is
    the stability study's (notebook 05).
    """
    num_steps = ref_att.shape[0]
    fixed = {
        "compiled": ref_att,
        "uniform neighbourhood": uniform_attention(batch, num_steps),
        "self only": self_attention(batch, num_steps),
    }
    rows = []
    for name, att in fixed.items():
        values = calibrated_measures(att, ref_att, batch.lengths, batch.node_mask)
        rows.append(
            {"point": name, "seeds": 0, **{k: float(values[k]) for k in GAP_MEASURES}}
        )
    initial = Models(
        models.config,
        init_stacked(models.config, batch, RANDOM_INIT_SEEDS),
        RANDOM_INIT_SEEDS,
        source="init",
    )
    at_init = measure_models(initial, batch, ref_att, chunk=chunk).scalars
    rows.append(
        {
            "point": "random init",
            "seeds": len(RANDOM_INIT_SEEDS),
            **{k: float(np.mean(at_init[k])) for k in GAP_MEASURES},
        }
    )
    return rows


# Measured again with every model teacher-forced on the true trace (the
# compiled reference too): mechanism without compounding errors.
FORCED_MEASURES = tuple(
    f"{name}_forced" for name in ("internal", "internal_argmax", "argmax_agreement")
)


def measure_with_forced(
    models: Models,
    reference: Model,
    batch: Batch,
    ref_att: np.ndarray,
    margins: Margins,
    chunk: int,
) -> SeedEvaluation:
    """``models`` measured against ``ref_att``, with the :data:`FORCED_MEASURES`.

    Those come from a second pass, every model and the reference
    teacher-forced on the true trace: mechanism without compounding errors.
    """
    evaluation = measure_models(models, batch, ref_att, margins, chunk=chunk)
    forced = measure_models(
        models,
        batch,
        reference_attention(reference, batch, forced=True),
        margins,
        chunk=chunk,
        forced=True,
    ).scalars
    return dataclasses.replace(
        evaluation,
        scalars={
            **evaluation.scalars,
            **{name: forced[name.removesuffix("_forced")] for name in FORCED_MEASURES},
        },
    )


def check_comparable(
    models: Models, reference: Model, final_models: Models | None
) -> None:
    """Refuse a reference of another algorithm, final models of other seeds."""
    if reference.config.algorithm != models.config.algorithm:
        raise ValueError(
            f"reference is a {reference.config.algorithm!r} model, the learned "
            f"ones {models.config.algorithm!r}"
        )
    if final_models is not None and (
        final_models.seeds != models.seeds or final_models.config != models.config
    ):
        raise ValueError(
            "final_models must be the same seeds of the same architecture as models"
        )
