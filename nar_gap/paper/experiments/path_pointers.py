"""Where a supervised BFS pointer goes wrong on long paths (beyond the paper).

Notebook 07's path case (:func:`~nar_gap.paper.experiments.causal_gap.
run_path_case`) asks whether the supervised recipe's misses on 16-node paths
come from where it attends; this section asks what its decoders read
instead, for the pair of recipes the generalisation study chose (supervised
and plain, the recipe study's seeds) and the compiled network, on the same
path graphs:

- **rollout**: the output ``pi``'s accuracy running free (the model's own
  hint predictions fed back, soft as in training and, as a control, hard:
  each pointer's argmax) and teacher-forced (the true trace fed at every
  step).  A model that misses only running free misses because of what it
  feeds itself;
- **hint errors**: every wrong ``pi_h`` prediction, by the node's state at
  the step it reads (not yet reached; reached at this step; reached before)
  and, for a node reached before, whether the pointer moved to a *child*
  (a neighbour one step farther from the source), by the parity of the
  node's distance from the source, and the earliest number of steps after
  the node was reached at which it did;
- **the output against its parent's pointer**: each non-source node's
  output, right or wrong, against whether its parent's ``pi_h``, as fed
  into the output step, points back at it;
- **an intervention** that makes the last one causal: the true trace,
  teacher-forced, with the pointers around one interior node ``v`` edited
  from :data:`EDIT_AGE` steps after ``v`` is reached (:func:`edited_cases`):
  ``parent_back`` (``v``'s parent points at ``v``) and ``both`` (also
  ``v``'s child points away from ``v``, to its own child).  A decoder that
  names ``v``'s parent from ``v``'s own state is not moved by either; the
  compiled network, which reads only the reach flags and the step's
  attention, is the control that must not be;
- **exposure**: how many steps after its reach a node keeps its pointer,
  in graphs the training sampler draws at every training size against the
  path graphs (:func:`age_counts`).

BFS only: reach and parent are its hints (``reach_h``, ``pi_h``).  Counts,
not intervals: the recipe study's 2 seeds at the cpu profile decide no
paired test; each seed's count is a row, and the table says its n.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nar_gap.analysis.models import Models
from nar_gap.compiler import DEFAULT_HIDDEN_SIZE, compile_algorithm
from nar_gap.model.activations import teacher_forced
from nar_gap.model.config import NetworkConfig
from nar_gap.model.model import Model
from nar_gap.model.seeds import forward
from nar_gap.paper.experiments import generalisation, recipes
from nar_gap.paper.experiments.profiles import OutputDirs, Profile
from nar_gap.paper.experiments.runs import metadata, run_dir
from nar_gap.system import files
from nar_gap.system.numerics import COMPILED_PRECISION
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.graphs import family_batch
from nar_gap.tasks.sampling import sample_batch
from nar_gap.training import train

ALGORITHMS = ("bfs",)
"""The algorithms this section reads: reach and parent are BFS's hints."""

EDIT_AGE = 4
"""Steps after ``v`` is reached at which the intervention's edits begin.

An age the training graphs hold (the exposure table counts them), so an
edited trace asks about the pattern of pointers, not an age never seen."""

EDITS = ("parent_back", "both")
TRAINING_GRAPHS = 64  # per training size, for the exposure table
TRAINING_SEED = 1  # the sampler's seed for those graphs (not a training batch's)

STATES = ("unreached", "reached_now", "reached_before")


def rows_file(algorithm: str) -> str:
    """Per model and seed: rollout, hint errors, outputs by pointer."""
    return f"path_pointers_{algorithm}.csv"


def edits_file(algorithm: str) -> str:
    """Per model, seed, edit and parity: the intervention's counts."""
    return f"path_pointers_edits_{algorithm}.csv"


def ages_file(algorithm: str) -> str:
    """Per age: node-steps in the training graphs and on the paths."""
    return f"path_pointers_ages_{algorithm}.csv"


def files_of(algorithm: str) -> list[str]:
    """The section's three tables for ``algorithm``."""
    return [rows_file(algorithm), edits_file(algorithm), ages_file(algorithm)]


def has_section(profile: Profile, algorithm: str) -> bool:
    """Whether notebook 07 measures this section for ``algorithm`` at ``profile``.

    Its recipes (the recipe study) and path graphs among the generalisation
    study's families.
    """
    families = profile.studies.ood_families or generalisation.SWEEP_FAMILIES
    return (
        algorithm in ALGORITHMS
        and algorithm in profile.studies.recipe_algorithms
        and "path" in families
    )


# --------------------------------------------------------------------------- #
# The true trace's facts, and the counts over predictions (pure numpy).
# --------------------------------------------------------------------------- #


@dataclasses.dataclass(frozen=True)
class Trace:
    """What the counts read from a BFS batch's true trace.

    Attributes:
      pi_h: ``[T, B, N]`` the true parent pointers at each hint step.
      reached_at: ``[B, N]`` the hint step at which each node is first
        reached (its distance from the source), -1 if never.
      parent: ``[B, N]`` the output ``pi``.
      neighbours: ``[B, N, N]`` adjacency without self-loops.
      lengths: ``[B]`` hint steps of each graph.
      node_mask: ``[B, N]`` real nodes.
    """

    pi_h: np.ndarray
    reached_at: np.ndarray
    parent: np.ndarray
    neighbours: np.ndarray
    lengths: np.ndarray
    node_mask: np.ndarray

    @classmethod
    def of(cls, batch: Batch) -> Trace:
        """The facts of ``batch``'s true trace (a BFS batch; else one line)."""
        if batch.algorithm not in ALGORITHMS:
            raise ValueError(
                f"path_pointers reads BFS's reach and parent hints, "
                f"not {batch.algorithm}'s"
            )
        reach = np.asarray(batch.hints["reach_h"]) > 0.5
        adjacency = np.asarray(batch.inputs["adj"]) > 0
        eye = np.eye(adjacency.shape[-1], dtype=bool)
        return cls(
            pi_h=np.asarray(batch.hints["pi_h"]).astype(np.int64),
            reached_at=np.where(reach.any(0), reach.argmax(0), -1),
            parent=np.asarray(batch.outputs["pi"]).astype(np.int64),
            neighbours=adjacency & ~eye,
            lengths=np.asarray(batch.lengths).astype(np.int64),
            node_mask=np.asarray(batch.node_mask).astype(bool),
        )

    def is_child(self, graph: int, node: int, other: int) -> bool:
        """Whether ``other`` is a neighbour one step farther from the source."""
        at = self.reached_at[graph]
        return bool(
            self.neighbours[graph, node, other]
            and at[node] >= 0
            and at[other] == at[node] + 1
        )


def hint_errors(predicted: np.ndarray, trace: Trace) -> dict[str, Any]:
    """Wrong ``pi_h`` predictions by node state, and the moves to a child.

    ``predicted``: ``[S, B, N]`` the pointer each step predicts (step ``t``
    predicts hint ``t + 1``).  Steps past a graph's trace are not counted.
    Returns ``errors_<state>`` and ``cells_<state>`` for each of
    :data:`STATES`, ``to_child_even`` and ``to_child_odd`` (errors of nodes
    reached before, pointing at a child, by the node's distance parity;
    the source, at distance 0, counts as even) and ``first_to_child_age``
    (the fewest steps after its reach at which a node pointed at a child;
    NaN if none did).
    """
    counts: dict[str, Any] = {f"errors_{s}": 0 for s in STATES}
    counts |= {f"cells_{s}": 0 for s in STATES}
    counts |= {"to_child_even": 0, "to_child_odd": 0}
    ages: list[int] = []
    steps, graphs, nodes = predicted.shape
    for t in range(steps):
        for b in range(graphs):
            if t + 1 >= trace.lengths[b]:
                continue
            for v in np.flatnonzero(trace.node_mask[b]):
                at = trace.reached_at[b, v]
                state = (
                    "reached_before"
                    if 0 <= at <= t
                    else ("reached_now" if at == t + 1 else "unreached")
                )
                counts[f"cells_{state}"] += 1
                guess = int(predicted[t, b, v])
                if guess == trace.pi_h[t + 1, b, v]:
                    continue
                counts[f"errors_{state}"] += 1
                if state == "reached_before" and trace.is_child(b, v, guess):
                    counts["to_child_odd" if at % 2 else "to_child_even"] += 1
                    ages.append(t + 1 - int(at))
    counts["first_to_child_age"] = float(min(ages)) if ages else float("nan")
    return counts


def fed_into_output_step(predicted: np.ndarray, trace: Trace) -> np.ndarray:
    """``[B, N]``: the ``pi_h`` each graph's output step reads, running free.

    The output is decoded at step ``L - 2`` of a trace of ``L`` hints, which
    reads hint ``L - 2``: the prediction of step ``L - 3``, or the true
    first hint when ``L - 2`` is 0.
    """
    fed = trace.pi_h[0].copy()
    for b, length in enumerate(trace.lengths):
        if length >= 3:
            fed[b] = predicted[length - 3, b]
    return fed


def output_by_parent_pointer(
    output: np.ndarray, fed: np.ndarray, trace: Trace
) -> dict[str, int]:
    """Each non-source reached node's output against its parent's fed pointer.

    ``output``: ``[B, N]`` the predicted parents; ``fed``: ``[B, N]`` the
    ``pi_h`` the output step read.  Returns ``{wrong,right}_parent_{back,on}``:
    ``back`` where the parent's pointer names the node itself.
    """
    counts = {f"{a}_parent_{b}": 0 for a in ("wrong", "right") for b in ("back", "on")}
    graphs, nodes = output.shape
    for b in range(graphs):
        for v in range(nodes):
            if trace.reached_at[b, v] <= 0 or not trace.node_mask[b, v]:
                continue
            parent = trace.parent[b, v]
            outcome = "wrong" if output[b, v] != parent else "right"
            side = "back" if fed[b, parent] == v else "on"
            counts[f"{outcome}_parent_{side}"] += 1
    return counts


@dataclasses.dataclass(frozen=True)
class Case:
    """One edited trace: graph ``graph``, node ``node`` at ``distance``."""

    graph: int
    node: int
    distance: int
    edit: str


def edited_cases(trace: Trace, age: int = EDIT_AGE) -> tuple[list[Case], np.ndarray]:
    """The intervention's cases and their ``pi_h`` traces (``[T, K, N]``).

    For every node ``v`` with exactly two neighbours (a path's interior),
    whose parent is not the source (the source points at itself), edited
    from step ``distance(v) + age`` to the end of its trace where the output
    step still reads an edited hint (step ``L - 2`` of ``L``; a later start
    would leave the output's input true): ``parent_back`` sets the parent's
    pointer to ``v``;
    ``both`` also sets ``v``'s child's pointer to the child's other
    neighbour (where it has one).  Every other pointer stays true.
    """
    cases: list[Case] = []
    traces: list[np.ndarray] = []
    for edit in EDITS:
        for b in range(trace.parent.shape[0]):
            for v in np.flatnonzero(trace.node_mask[b]):
                at = int(trace.reached_at[b, v])
                around = np.flatnonzero(trace.neighbours[b, v])
                if at < 1 or len(around) != 2:
                    continue
                parent = int(trace.parent[b, v])
                if trace.reached_at[b, parent] == 0:
                    continue
                start = at + age
                if start > trace.lengths[b] - 2:  # the output step reads L - 2
                    continue
                edited = trace.pi_h[:, b].copy()
                edited[start : trace.lengths[b], parent] = v
                if edit == "both":
                    child = int(next(u for u in around if u != parent))
                    away = [
                        u for u in np.flatnonzero(trace.neighbours[b, child]) if u != v
                    ]
                    if not away:
                        continue
                    edited[start : trace.lengths[b], child] = away[0]
                cases.append(Case(b, int(v), at, edit))
                traces.append(edited)
    if not traces:
        return [], np.zeros((trace.pi_h.shape[0], 0, trace.pi_h.shape[2]), np.int64)
    return cases, np.stack(traces, axis=1)


def edited_batch(batch: Batch, cases: Sequence[Case], pi_h: np.ndarray) -> Batch:
    """``batch``'s graphs, one per case, with the case's ``pi_h`` trace."""
    index = np.array([c.graph for c in cases], dtype=np.int64)

    def pick(x: Any, axis: int) -> np.ndarray:
        return np.take(np.asarray(x), index, axis=axis)

    hints = {
        k: (pi_h.astype(np.asarray(x).dtype) if k == "pi_h" else pick(x, 1))
        for k, x in batch.hints.items()
    }
    return dataclasses.replace(
        batch,
        inputs={k: pick(x, 0) for k, x in batch.inputs.items()},
        hints=hints,
        outputs={k: pick(x, 0) for k, x in batch.outputs.items()},
        lengths=pick(batch.lengths, 0),
        node_mask=pick(batch.node_mask, 0),
    )


def edit_counts(
    output: np.ndarray, unedited: np.ndarray, cases: Sequence[Case], trace: Trace
) -> list[dict[str, Any]]:
    """Per edit and distance parity: the cases whose ``v`` the edit got wrong.

    ``output``: ``[K, N]`` the predicted parents of the edited batch;
    ``unedited``: ``[B, N]`` the same model's on the true trace.  ``wrong``
    counts ``v``'s wrong outputs under the edit, ``wrong_unedited`` those
    already wrong on the true trace, ``broken`` those the edit made wrong
    (right on the true trace): a model that misses ``v`` anyway is not
    moved by the edit.
    """
    tally: dict[tuple[str, str], list[int]] = {}
    for k, case in enumerate(cases):
        parity = "odd" if case.distance % 2 else "even"
        cell = tally.setdefault((case.edit, parity), [0, 0, 0, 0])
        truth = trace.parent[case.graph, case.node]
        wrong = output[k, case.node] != truth
        before = unedited[case.graph, case.node] != truth
        cell[0] += int(wrong)
        cell[1] += int(before)
        cell[2] += int(wrong and not before)
        cell[3] += 1
    return [
        {
            "edit": edit,
            "parity": parity,
            "wrong": w,
            "wrong_unedited": u,
            "broken": k,
            "cases": n,
        }
        for (edit, parity), (w, u, k, n) in sorted(tally.items())
    ]


def age_counts(traces: Iterable[Trace]) -> dict[int, int]:
    """``{age: node-steps}``: reached nodes ``age`` ≥ 1 steps after their reach.

    Counted over each graph's hint steps 1 to ``L - 1`` (those a step
    predicts), every real node reached before that step.
    """
    counts: dict[int, int] = {}
    for trace in traces:
        for b, length in enumerate(trace.lengths):
            at = trace.reached_at[b][trace.node_mask[b]]
            for t in range(1, int(length)):
                for age in (t - at[(at >= 0) & (at < t)]).tolist():
                    counts[age] = counts.get(age, 0) + 1
    return counts


def age_rows(training: Mapping[int, int], paths: Mapping[int, int]) -> list[dict]:
    """Per age, each source's node-steps at that age and its share at or above it."""
    rows = []
    totals = {"training": sum(training.values()), "paths": sum(paths.values())}
    for age in range(1, max([*training, *paths], default=0) + 1):
        row: dict[str, Any] = {"age": age}
        for name, counts in (("training", training), ("paths", paths)):
            above = sum(n for a, n in counts.items() if a >= age)
            row[f"{name}_node_steps"] = counts.get(age, 0)
            row[f"{name}_share_at_least"] = (
                above / totals[name] if totals[name] else 0.0
            )
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- #
# The models: forward passes and the tables.
# --------------------------------------------------------------------------- #


def _pointers(logits: Any) -> np.ndarray:
    return np.asarray(logits).argmax(-1)


def _precision(compiled: bool) -> str | None:
    """Compiled weights reach 1e7: a GPU must not round them to TF32."""
    return COMPILED_PRECISION if compiled else None


def model_row(model: Model, batch: Batch, compiled: bool = False) -> dict[str, Any]:
    """One model's rollout accuracies, hint errors and output-by-pointer counts."""
    trace = Trace.of(batch)
    precision = _precision(compiled)
    config: NetworkConfig = model.config
    free = forward(config, True, precision)(model.params, batch)
    hard = forward(
        dataclasses.replace(config, hint_repred_mode="hard"), True, precision
    )(model.params, batch)
    forced = forward(teacher_forced(config), False, precision)(model.params, batch)
    mask = trace.node_mask
    predicted = _pointers(free.hint_preds["pi_h"])

    def accuracy(out: Any) -> float:
        return float((_pointers(out.outputs["pi"]) == trace.parent)[mask].mean())

    output = _pointers(free.outputs["pi"])
    return {
        "output_free": accuracy(free),
        "output_free_hard": accuracy(hard),
        "output_forced": accuracy(forced),
        **hint_errors(predicted, trace),
        **output_by_parent_pointer(
            output, fed_into_output_step(predicted, trace), trace
        ),
    }


def model_edit_rows(
    model: Model, batch: Batch, compiled: bool = False
) -> list[dict[str, Any]]:
    """The intervention's counts for one model (:func:`edited_cases`)."""
    trace = Trace.of(batch)
    cases, pi_h = edited_cases(trace)
    if not cases:
        return []
    apply = forward(teacher_forced(model.config), False, _precision(compiled))
    edited = apply(model.params, edited_batch(batch, cases, pi_h))
    unedited = apply(model.params, batch)
    return edit_counts(
        _pointers(edited.outputs["pi"]), _pointers(unedited.outputs["pi"]), cases, trace
    )


@dataclasses.dataclass(frozen=True)
class Measured:
    """The section's three tables."""

    rows: list[dict[str, Any]]
    edits: list[dict[str, Any]]
    ages: list[dict[str, Any]]


def measure(
    contenders: Sequence[tuple[str, str, Models]],
    compiled: Model,
    batch: Batch,
    training: Sequence[Batch],
) -> Measured:
    """Every seed of each ``(contender, recipe, models)`` and ``compiled``."""
    labelled = [
        (contender, recipe, int(seed), model, False)
        for contender, recipe, models in contenders
        for seed, model in zip(models.seeds, models.each(), strict=True)
    ]
    labelled.append(("compiled", "compiled", -1, compiled, True))
    rows, edits = [], []
    shape = {"graphs": batch.batch_size, "num_nodes": batch.num_nodes}
    for contender, recipe, seed, model, exact in labelled:
        who = {"contender": contender, "recipe": recipe, "seed": seed}
        rows.append({**who, **shape, **model_row(model, batch, exact)})
        edits += [
            {**who, "age": EDIT_AGE, **r} for r in model_edit_rows(model, batch, exact)
        ]
    ages = age_rows(age_counts(map(Trace.of, training)), age_counts([Trace.of(batch)]))
    return Measured(rows, edits, ages)


def training_batches(profile: Profile, algorithm: str) -> list[Batch]:
    """Graphs the training sampler draws at each of ``profile``'s training sizes."""
    return [
        sample_batch(algorithm, n, TRAINING_GRAPHS, TRAINING_SEED)
        for n in profile.train_lengths
    ]


def run_path_pointers(
    profile: Profile, algorithm: str, dirs: OutputDirs, progress: bool = True
) -> Measured:
    """Notebook 07's section: the chosen recipe pair's seeds and compiled, on paths.

    The recipes are read back from their runs (the generalisation study
    trained them).  Reading (``dirs.reading``): the three tables read back.
    """
    if dirs.reading:
        return Measured(*(dirs.read_back(n, typed=True) for n in files_of(algorithm)))
    pair = generalisation.chosen_recipes(dirs.results, algorithm)
    seeds = profile.studies.recipe_seeds
    contenders = []
    for contender, name in zip(("supervised", "plain"), pair, strict=True):
        recipe = recipes.named([name])[0]
        config = recipes.recipe_config(profile, algorithm, recipe, seeds)
        result = train(config, run_dir(config, dirs.runs), progress=progress)
        contenders.append((contender, name, Models.from_run(result)))
    batch = family_batch(
        algorithm, "path", generalisation.FAMILY_NODES, generalisation.FAMILY_GRAPHS
    )
    compiled = compile_algorithm(
        algorithm, hidden_size=DEFAULT_HIDDEN_SIZE, num_nodes=batch.num_nodes
    )
    measured = measure(
        contenders, compiled, batch, training_batches(profile, algorithm)
    )
    meta = metadata(
        profile,
        recipes=list(pair),
        seeds=seeds,
        edit_age=EDIT_AGE,
        training_graphs=TRAINING_GRAPHS,
        training_seed=TRAINING_SEED,
        compiled_hidden_size=DEFAULT_HIDDEN_SIZE,
    )
    results = Path(dirs.results)
    for name, rows in zip(
        files_of(algorithm), (measured.rows, measured.edits, measured.ages), strict=True
    ):
        files.write_table(results / name, rows, meta)
    return measured


# --------------------------------------------------------------------------- #
# Sentences, from the tables.
# --------------------------------------------------------------------------- #


def sentences(measured: Measured) -> list[str]:
    """Each contender's counts in a line, read from the tables (no typed result)."""
    lines = []
    for r in measured.rows:
        who = f"{r['contender']} ({r['recipe']}, seed {r['seed']})"
        flips = int(r["to_child_even"]) + int(r["to_child_odd"])
        wrong = int(r["wrong_parent_back"]) + int(r["wrong_parent_on"])
        lines.append(
            f"{who}: output pi {float(r['output_free']):.3f} free "
            f"({float(r['output_free_hard']):.3f} with hard feedback), "
            f"{float(r['output_forced']):.3f} teacher-forced; pi_h errors "
            + ", ".join(f"{s} {r[f'errors_{s}']}/{r[f'cells_{s}']}" for s in STATES)
            + f"; to a child {flips} (even {r['to_child_even']}, odd "
            f"{r['to_child_odd']}), first {r['first_to_child_age']} steps after "
            f"reach; wrong outputs whose parent points back "
            f"{r['wrong_parent_back']}/{wrong}"
        )
    edits: dict[tuple[str, str, int], dict[str, list[int]]] = {}
    for r in measured.edits:
        key = (r["contender"], r["recipe"], int(r["seed"]))
        cell = edits.setdefault(key, {}).setdefault(str(r["edit"]), [0, 0, 0])
        cell[0] += int(r["broken"])
        cell[1] += int(r["cases"]) - int(r["wrong_unedited"])
        cell[2] += int(r["cases"])
    for (contender, recipe, seed), by_edit in edits.items():
        lines.append(
            f"edited trace, {contender} ({recipe}, seed {seed}): outputs of v the "
            "edit made wrong, of those right on the true trace: "
            + ", ".join(f"{e} {b}/{n} ({c} cases)" for e, (b, n, c) in by_edit.items())
        )
    for r in measured.ages:
        if int(r["age"]) == EDIT_AGE:
            lines.append(
                f"node-steps {EDIT_AGE} or more steps after reach: training "
                f"{float(r['training_share_at_least']):.3f}, paths "
                f"{float(r['paths_share_at_least']):.3f}"
            )
    return lines
