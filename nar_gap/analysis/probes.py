"""Probes: can an algorithm's variables be read out of a model's hidden state?

A probe is a small map fitted from the hidden state ``h_i`` a step computes
(the ``hidden`` site of :mod:`nar_gap.model.activations`) to the value of one
of the algorithm's node variables that the step's decoders predict: the hint
at time ``t + 1`` (CLRS's ``reach_h`` and ``pi_h`` for BFS; ``d``, ``msk``,
``pi_h`` for Bellman-Ford; ``color``, ``pi_h``, ``d``, ``f`` ... for DFS).
It is fitted on one batch of graphs and scored on another, so a probe that
memorises its graphs scores at its floor; the floor itself is measured, by the
same probe on a randomly initialised network's hidden state.

Two forms, so that "the variable is there" and "the variable is there
linearly" can be told apart:

* ``linear``: one affine map (for a pointer, a bilinear score
  ``(A h_i) . (B h_j)`` over the candidate parents ``j`` of node ``i``);
* ``mlp``: one hidden layer of ``width`` ReLU units before it.

Losses: binary cross-entropy for masks, softmax cross-entropy for
categorical values and pointers (over the graph's real nodes), squared error
for scalars (standardised on the fitting rows).  Scores: accuracy for masks,
categorical values and pointers; the coefficient of determination R² for
scalars.  Rows are the counted (step, graph, node) triples: steps that
predict a real hint of their graph (``t < L_b - 1``), real nodes only.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from nar_gap.model.decoders import postprocess
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.specs import get_spec
from nar_gap.tasks.vocabulary import Location, Stage, Type

PROBE_FORMS = ("linear", "mlp")
PROBED_TYPES = (Type.MASK, Type.MASK_ONE, Type.SCALAR, Type.CATEGORICAL, Type.POINTER)


@dataclasses.dataclass(frozen=True)
class ProbeRows:
    """One variable's probe data, flattened to rows.

    Attributes:
      kind: the variable's CLRS type (``mask``, ``scalar``, ...).
      features: ``[M, D]`` hidden states of the counted nodes.
      targets: ``[M]`` (a mask, scalar or pointer index) or ``[M, C]``.
      candidates: for a pointer, ``[K, N, D]`` the hidden states of every
        node of each (step, graph) the rows come from, ``candidate_mask``
        ``[K, N]`` its real ones, and ``group`` ``[M]`` each row's index
        into them (a row's candidates are its graph's nodes at its step;
        kept once per graph and step, not once per row: ``N`` times less
        memory); None otherwise.  A ``mask_one`` variable's rows carry
        ``group`` alone: one node of each group is the selected one.
      steps: ``[M]`` the hint step of each row (scores per step select on it).
      edges: for a pointer, ``[M, N, C]`` the graph's edge inputs between the
        row's node and each candidate, both ways (dm-clrs's pointer decoders
        read the edge features beside the node states; a probe without them
        cannot tell a neighbour from a stranger); None otherwise.
    """

    kind: str
    features: np.ndarray
    targets: np.ndarray
    candidates: np.ndarray | None = None
    candidate_mask: np.ndarray | None = None
    steps: np.ndarray | None = None
    group: np.ndarray | None = None
    edges: np.ndarray | None = None

    def at_step(self, step: int) -> ProbeRows:
        """The rows of hint step ``step`` alone (none where no graph counts it)."""
        if self.steps is None:
            raise ValueError("these rows carry no steps")
        keep = self.steps == step

        return ProbeRows(
            self.kind,
            self.features[keep],
            self.targets[keep],
            self.candidates,
            self.candidate_mask,
            self.steps[keep],
            None if self.group is None else self.group[keep],
            None if self.edges is None else self.edges[keep],
        )


def probed_variables(algorithm: str) -> tuple[str, ...]:
    """``algorithm``'s node hints a probe can read (every node-located hint)."""
    return tuple(
        name
        for name, (stage, loc, typ) in get_spec(algorithm).items()
        if stage == Stage.HINT and loc == Location.NODE and typ in PROBED_TYPES
    )


DECODER_SITES = ("node_fts", "hidden_in", "hidden")
"""The cached sites a hint decoder reads, concatenated in this order."""


def decoder_features(cache: Mapping[str, Any]) -> np.ndarray:
    """What a step's hint decoders read, ``[S, B, N, 3D]``, from a model's cache.

    dm-clrs's decoders read the encoded node features, the hidden state
    before the step and the one after it, side by side; a probe given the
    same reads what the decoder could (the compiled BFS keeps the source in
    the node features alone, not in ``h``).
    """
    return np.concatenate([np.asarray(cache[name]) for name in DECODER_SITES], -1)


def _counted(batch: Batch, steps: int) -> np.ndarray:
    """``[S, B, N]``: the (step, graph, node) triples a probe is fitted and scored on.

    A step ``t`` counts while hint ``t + 1`` exists (``t < L_b - 1``), a node
    where it is real.
    """
    lengths = np.asarray(batch.lengths)
    counted = (np.arange(steps)[:, None] < (lengths - 1)[None, :])[:, :, None]
    return counted & np.asarray(batch.node_mask, bool)[None]


def probe_rows(hiddens: Any, batch: Batch, variable: str) -> ProbeRows:
    """The counted rows of ``variable`` for hidden states ``[S, B, N, D]``.

    Step ``t``'s state is paired with the hint at ``t + 1``, the value its
    decoders predict.
    """
    spec = get_spec(batch.algorithm)
    if variable not in probed_variables(batch.algorithm):
        raise ValueError(
            f"{batch.algorithm} has no node hint {variable!r} to probe; "
            f"probed: {', '.join(probed_variables(batch.algorithm))}"
        )
    kind = spec[variable][2]
    hiddens = np.asarray(hiddens)
    steps = hiddens.shape[0]
    hint = np.asarray(batch.hints[variable])[1 : steps + 1]  # [S, B, N(, C)]
    node_mask = np.asarray(batch.node_mask, bool)
    rows = _counted(batch, steps)
    candidates = candidate_mask = group = edges = None
    step, graph, node = np.nonzero(rows)
    if kind in (Type.POINTER, Type.MASK_ONE):
        pairs, group = np.unique(
            np.stack([step, graph], 1), axis=0, return_inverse=True
        )
        group = group.reshape(-1)
    if kind == Type.POINTER:
        edges = _edge_inputs(batch)[graph, node]  # [M, N, C]
        candidates = hiddens[pairs[:, 0], pairs[:, 1]]  # [K, N, D]
        candidate_mask = node_mask[pairs[:, 1]]
    return ProbeRows(
        kind,
        hiddens[rows],
        hint[rows],
        candidates,
        candidate_mask,
        step,
        group,
        edges,
    )


def _edge_inputs(batch: Batch) -> np.ndarray:
    """``[B, N, N, 2C]``: each edge-located input, from i to j and from j to i."""
    spec = get_spec(batch.algorithm)
    found = [
        np.asarray(batch.inputs[name], np.float32)
        for name, (stage, loc, _) in spec.items()
        if stage == Stage.INPUT and loc == Location.EDGE and name in batch.inputs
    ]
    if not found:
        b, n = np.asarray(batch.node_mask).shape
        return np.zeros((b, n, n, 0), np.float32)
    both = [*found, *(np.swapaxes(e, 1, 2) for e in found)]
    return np.stack(both, -1)


@dataclasses.dataclass(frozen=True)
class ProbeFit:
    """A fitted probe: its parameters, and how its inputs and target were scaled.

    ``centre``, ``scale``: a scalar target's; ``feature_mean``,
    ``feature_scale``: each feature's on the rows it was fitted on.  A probe
    standardises its features first: the compiled BFS's states are sparse
    (each of ``node_fts``, ``hidden_in`` and ``hidden`` at most 1 in
    magnitude, their means below 0.01 on CLRS's test graphs), a trained
    network's are not, and an unscaled fit of a fixed number of Adam steps
    would measure the optimiser's conditioning, not what the state holds.
    """

    form: str
    kind: str
    params: Any
    centre: float = 0.0
    scale: float = 1.0
    feature_mean: np.ndarray | float = 0.0
    feature_scale: np.ndarray | float = 1.0


def _init(form: str, kind: str, rows: ProbeRows, width: int, key: jax.Array) -> Any:
    features = rows.features.shape[-1]
    out = rows.targets.shape[-1] if rows.targets.ndim == 2 else 1
    keys = jax.random.split(key, 4)

    def dense(k: jax.Array, n_in: int, n_out: int) -> dict[str, jax.Array]:
        w = jax.random.normal(k, (n_in, n_out)) / np.sqrt(max(n_in, 1))
        return {"w": w, "b": jnp.zeros(n_out)}

    body = {"hidden": dense(keys[0], features, width)} if form == "mlp" else {}
    size = width if form == "mlp" else features
    if kind == Type.POINTER:
        edges = 0 if rows.edges is None else rows.edges.shape[-1]
        return {
            **body,
            "query": dense(keys[1], size, width),
            "key": dense(keys[2], size, width),
            **({"edge": dense(keys[3], edges, 1)} if edges else {}),
        }
    return {**body, "out": dense(keys[3], size, out)}


def _embed(params: Any, x: jax.Array) -> jax.Array:
    if "hidden" in params:
        x = jax.nn.relu(x @ params["hidden"]["w"] + params["hidden"]["b"])
    return x


def _logits(params: Any, kind: str, data: Mapping[str, Any]) -> jax.Array:
    """``[M]`` (mask, scalar) or ``[M, C]`` per row; a pointer ``[K, R, N]``.

    A pointer's rows come laid out per (step, graph) group (:func:`_laid_out`):
    each row scores its own group's candidates by one batched matmul.
    """
    h = _embed(params, data["x"])
    if kind == Type.POINTER:
        q = h @ params["query"]["w"] + params["query"]["b"]  # [K, R, W]
        keys = _embed(params, data["cand"]) @ params["key"]["w"] + params["key"]["b"]
        scores = jnp.einsum("krw,knw->krn", q, keys)
        if "edge" in params:
            edge = params["edge"]
            scores = scores + (data["edges"] @ edge["w"] + edge["b"])[..., 0]
        return jnp.where(data["cmask"][:, None, :], scores, -1e9)
    out = h @ params["out"]["w"] + params["out"]["b"]
    return out if kind == Type.CATEGORICAL else out[:, 0]


def _loss(params: Any, kind: str, rows: dict[str, jax.Array]) -> jax.Array:
    logits = _logits(params, kind, rows)
    y = rows["y"]
    if kind in (Type.MASK, Type.MASK_ONE):
        return optax.sigmoid_binary_cross_entropy(logits, y).mean()
    if kind == Type.CATEGORICAL:
        return optax.softmax_cross_entropy(logits, y).mean()
    if kind == Type.POINTER:
        each = optax.softmax_cross_entropy_with_integer_labels(
            logits, y.astype(jnp.int32)
        )
        return jnp.sum(jnp.where(rows["real"], each, 0.0)) / jnp.sum(rows["real"])
    return jnp.mean((logits - y) ** 2)


def _laid_out(rows: ProbeRows) -> tuple[np.ndarray, int]:
    """Each pointer row's slot in a ``[K, R]`` grid: group ``k``, place in it.

    ``R`` is the most rows any (step, graph) group has.  A row's candidates
    are its group's nodes; with the rows gathered as ``candidates[group]``
    (``[M, N, W]``) the fit spent most of its time in that gather and, in
    the backward pass, the scatter-add into ``K`` groups, which XLA:CPU runs
    serially.  Laid out per group, scoring is a batched matmul.  Measured on
    2 CPU cores (a BFS pointer probe, M = 2 368, K = 37, N = 64, 500 Adam
    steps): 1.31 s against 3.44 s, the same loss to 1e-5.
    """
    group = _groups(rows)
    counts = np.bincount(group, minlength=len(rows.candidates))
    width = max(int(counts.max(initial=0)), 1)
    order = np.argsort(group, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    place = np.empty(len(group), np.int64)
    place[order] = np.arange(len(order)) - starts[group[order]]
    return group * width + place, width


def _groups(rows: ProbeRows) -> np.ndarray:
    """Each row's candidate group; without ``group``, row ``m`` has group ``m``."""
    if rows.group is None:
        return np.arange(len(rows.targets))
    return np.asarray(rows.group)


def _in_grid(values: np.ndarray, slots: np.ndarray, groups: int, width: int) -> Any:
    grid = np.zeros((groups * width, *values.shape[1:]), values.dtype)
    grid[slots] = values
    return grid.reshape(groups, width, *values.shape[1:])


def _device_rows(
    rows: ProbeRows, target: np.ndarray, mean: Any = 0.0, scale: Any = 1.0
) -> dict[str, Any]:
    """The rows as the jitted fit reads them; a pointer's laid out per group."""
    x = ((rows.features - mean) / scale).astype(np.float32)
    if rows.kind != Type.POINTER:
        return {"x": jnp.asarray(x), "y": jnp.asarray(target, jnp.float32)}
    slots, width = _laid_out(rows)
    groups, nodes = rows.candidates.shape[:2]
    grid = lambda values: jnp.asarray(_in_grid(values, slots, groups, width))  # noqa: E731
    edges = rows.edges
    if edges is None:
        edges = np.zeros((len(target), nodes, 0), np.float32)
    cmask = rows.candidate_mask
    return {
        "x": grid(x),
        "y": grid(np.asarray(target, np.int32)),
        "real": grid(np.ones(len(target), bool)),
        "cand": jnp.asarray((rows.candidates - mean) / scale, jnp.float32),
        "cmask": jnp.asarray(
            np.ones((groups, nodes), bool) if cmask is None else cmask
        ),
        "edges": grid(np.asarray(edges, np.float32)),
    }


def _row_logits(fit: ProbeFit, rows: ProbeRows) -> np.ndarray:
    """The probe's logits of each of ``rows``, in their order."""
    data = _device_rows(rows, rows.targets, fit.feature_mean, fit.feature_scale)
    logits = np.asarray(_logits(fit.params, fit.kind, data))
    if fit.kind != Type.POINTER:
        return logits
    slots, _ = _laid_out(rows)
    return logits.reshape(-1, logits.shape[-1])[slots]


def fit_probe(
    rows: ProbeRows,
    form: str = "linear",
    width: int = 32,
    steps: int = 500,
    learning_rate: float = 1e-2,
    seed: int = 0,
) -> ProbeFit:
    """Fit a ``form`` probe on ``rows`` (full batch, Adam, ``steps`` steps).

    ``steps`` is a budget, not convergence.  A BFS ``pi_h`` probe of a
    trained cpu seed's state (64-node graphs) ends at loss 0.26 after 500
    steps and 0.09 after 2 000, its held-out accuracy 0.93 against 0.97; and
    at 500 steps a change of float rounding alone (the grid layout of
    :func:`_laid_out` against the gathered one) moved one seed's held-out
    accuracy by 0.014 while leaving others bit for bit.  A probe score is
    what this budget reads, a lower bound on what the state holds.
    """
    if form not in PROBE_FORMS:
        raise ValueError(
            f"unknown probe form {form!r}; one of {', '.join(PROBE_FORMS)}"
        )
    if len(rows.targets) == 0:
        raise ValueError("no counted rows to fit a probe on")
    centre, scale = 0.0, 1.0
    target = rows.targets
    if rows.kind == Type.SCALAR:
        centre, scale = float(target.mean()), float(target.std()) or 1.0
        target = (target - centre) / scale
    mean = rows.features.mean(0)
    spread = rows.features.std(0)
    spread = np.where(spread > 1e-6 * max(1.0, float(np.abs(mean).max())), spread, 1.0)
    data = _device_rows(rows, target, mean, spread)
    params = _init(form, rows.kind, rows, width, jax.random.PRNGKey(seed))
    fitted = _train(params, data, rows.kind, steps, learning_rate)
    return ProbeFit(
        form, rows.kind, jax.device_get(fitted), centre, scale, mean, spread
    )


@functools.partial(jax.jit, static_argnames=("kind", "steps", "learning_rate"))
def _train(
    params: Any, data: dict[str, Any], kind: str, steps: int, learning_rate: float
) -> Any:
    """Adam on the full batch; one program per (kind, shapes, steps, rate).

    Module-level, so a study fitting a probe per model and variable compiles
    once per variable, not once per fit (the rows' shapes are the batch's).
    """
    optimizer = optax.adam(learning_rate)

    def step(carry: tuple, _: None) -> tuple:
        p, state = carry
        grads = jax.grad(_loss)(p, kind, data)
        updates, state = optimizer.update(grads, state, p)
        return (optax.apply_updates(p, updates), state), None

    (fitted, _), _ = jax.lax.scan(step, (params, optimizer.init(params)), None, steps)
    return fitted


def probe_hits(fit: ProbeFit, rows: ProbeRows) -> np.ndarray:
    """Per row, whether the probe reads it right (masks, categorical, pointers).

    ``[M]`` booleans, in ``rows``' order: the per-step and per-variable
    accuracies of a study are means over a selection of them.  Scalars have
    no hit (:func:`score_probe` gives their R²).
    """
    if fit.kind != rows.kind:
        raise ValueError(f"a {fit.kind} probe cannot score {rows.kind} rows")
    if fit.kind == Type.SCALAR:
        raise ValueError(
            "a scalar probe has no per-row hits; probe_values gives its values"
        )
    logits = _row_logits(fit, rows)
    if fit.kind == Type.MASK_ONE and rows.group is not None:
        logits = _group_selected(logits, np.asarray(rows.group))
    return _hits(fit.kind, logits, rows.targets)


def _group_selected(logits: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Per row, +1 where it is its (step, graph) group's highest logit, else -1.

    A ``mask_one`` probe is fitted node by node, and read as its decoder is
    (:func:`_decoded`): one node per graph.  Ties go to the first row.
    """
    order = np.lexsort((-logits, group))  # by group, the highest first
    first = np.ones(len(order), bool)
    first[1:] = group[order][1:] != group[order][:-1]
    picked = np.zeros(len(logits), bool)
    picked[order[first]] = True
    return np.where(picked, 1.0, -1.0)


def _hits(kind: str, logits: np.ndarray, targets: np.ndarray) -> np.ndarray:
    if kind in (Type.MASK, Type.MASK_ONE):
        return (logits > 0) == (targets > 0.5)
    if kind == Type.CATEGORICAL:
        return logits.argmax(-1) == targets.argmax(-1)
    return logits.argmax(-1) == targets


def probe_values(fit: ProbeFit, rows: ProbeRows) -> np.ndarray:
    """Per row, a scalar probe's prediction, in the target's units.

    ``[M]``, in ``rows``' order: the scalar's counterpart of
    :func:`probe_hits` (a study's R² per step is :func:`r_squared` of a
    selection of them).
    """
    if fit.kind != rows.kind:
        raise ValueError(f"a {fit.kind} probe cannot score {rows.kind} rows")
    if fit.kind != Type.SCALAR:
        raise ValueError(f"a {fit.kind} probe predicts classes; probe_hits scores it")
    return _row_logits(fit, rows) * fit.scale + fit.centre


def r_squared(predicted: np.ndarray, targets: np.ndarray) -> float:
    """The coefficient of determination; NaN where the targets do not vary."""
    total = float(np.sum((targets - targets.mean()) ** 2)) if len(targets) else 0.0
    if not total:
        return float("nan")
    return 1.0 - float(np.sum((targets - predicted) ** 2)) / total


def score_probe(fit: ProbeFit, rows: ProbeRows) -> float:
    """Accuracy (masks, categorical, pointers) or R² (scalars) on ``rows``."""
    if fit.kind == Type.SCALAR:
        return r_squared(probe_values(fit, rows), rows.targets)
    return float(np.mean(probe_hits(fit, rows)))


def _decoded(logits: Any, batch: Batch, variable: str) -> tuple[str, Any, Any]:
    """The variable's kind, the decoder's output and the hint, on the counted rows.

    A ``mask_one`` decoder's output becomes what the network feeds back from
    it (:func:`~nar_gap.model.decoders.postprocess`, hard): its graph's
    highest-scoring node, one-hot (the decoder gave padded nodes no chance).
    Its logits are compared with each other, not with 0: the exact compiled
    DFS's ``s``, ``u``, ``v`` and ``s_last`` read as signs scored 0.49-0.59.
    A ``mask_one`` probe beside it is read the same way (:func:`probe_hits`).
    """
    kind = get_spec(batch.algorithm)[variable][2]
    if kind == Type.MASK_ONE:
        logits = postprocess(kind, jnp.asarray(logits), hard=True)
    logits = np.asarray(logits)
    rows = _counted(batch, logits.shape[0])
    hint = np.asarray(batch.hints[variable])[1 : logits.shape[0] + 1]
    return kind, logits[rows], hint[rows]


def decoder_hits(logits: Any, batch: Batch, variable: str) -> np.ndarray:
    """Per counted row of :func:`probe_rows`, whether the model's decoder is right.

    ``logits``: the model's decoder output for hint ``variable``
    (``run_with_cache``'s ``hint.<variable>``, ``[S, B, N(, N or C)]``), step
    ``t`` predicting hint ``t + 1``: the probe's rows, in its order, so a
    probe and the decoder it stands beside are scored on the same nodes.
    """
    kind, decoded, hint = _decoded(logits, batch, variable)
    if kind == Type.SCALAR:
        raise ValueError(f"{variable} is a scalar: decoder_values gives its values")
    return _hits(kind, decoded, hint)


def decoder_values(logits: Any, batch: Batch, variable: str) -> np.ndarray:
    """Per counted row, a scalar decoder's prediction (:func:`decoder_hits`' rows)."""
    kind, decoded, _ = _decoded(logits, batch, variable)
    if kind != Type.SCALAR:
        raise ValueError(f"{variable} is a {kind}: decoder_hits scores it")
    return decoded


SITES = {
    "hidden": lambda cache: np.asarray(cache["hidden"]),
    "inputs": decoder_features,
}
"""What a probe can read from a model's cache: the step's hidden state ``h``,
or everything a hint decoder reads (:func:`decoder_features`)."""

STUDY_READS = {
    "probe_state": ("hidden", "linear"),
    "probe_state_mlp": ("hidden", "mlp"),
    "probe_inputs": ("inputs", "linear"),
}
"""Column: (site, form).  ``h`` linearly and with one hidden layer (a
variable a linear probe misses may still be there, as the compiled BFS's
own ``pi_h`` on paths is), and the decoder's inputs linearly, as the
decoder itself reads them."""


def metric_of(algorithm: str, variable: str) -> str:
    """How a variable is scored: ``accuracy``, or ``r2`` for a scalar (``d``)."""
    return "r2" if get_spec(algorithm)[variable][2] == Type.SCALAR else "accuracy"


def _reads(
    caches: tuple[Mapping[str, Any], Mapping[str, Any]],
    fit_batch: Batch,
    score_batch: Batch,
    variable: str,
    reads: Mapping[str, tuple[str, str]],
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Scored rows' steps and targets, and per column each row's read.

    A read is a hit or, for a scalar, the predicted value: each of ``reads``
    fitted on ``fit_batch`` and scored on ``score_batch``, and the model's
    own decoder (``decoder``) on the same rows.  ``caches``: the model's
    caches on the two batches, run once for every variable.
    """
    fit_cache, cache = caches
    scalar = metric_of(score_batch.algorithm, variable) == "r2"
    found, scored = {}, None
    for column, (site, form) in reads.items():
        fit_rows = probe_rows(SITES[site](fit_cache), fit_batch, variable)
        scored = probe_rows(SITES[site](cache), score_batch, variable)
        fit = fit_probe(fit_rows, form)
        found[column] = (probe_values if scalar else probe_hits)(fit, scored)
    decoded = decoder_values if scalar else decoder_hits
    found["decoder"] = decoded(cache[f"hint.{variable}"], score_batch, variable)
    if scored is None:
        raise ValueError("no probe to read: give at least one column")
    return scored.steps, scored.targets, found


def probe_scores(
    model: Any,
    fit_batch: Batch,
    score_batch: Batch,
    reads: Mapping[str, tuple[str, str]] = STUDY_READS,
) -> list[dict[str, Any]]:
    """A model's probes of every node variable, pooled and per hint step.

    ``model``: anything with ``run_with_cache`` (compiled, trained, random).
    Per variable of :func:`probed_variables`, each probe of ``reads``
    (column: (site of :data:`SITES`, form)) fitted on ``fit_batch``'s graphs
    and scored on ``score_batch``'s, and the model's own decoder on the same
    rows (column ``decoder``), by ``metric`` (:func:`metric_of`).  One row
    per variable and step, ``step`` ``"all"`` the pooled one.
    """
    algorithm = score_batch.algorithm
    caches = (model.run_with_cache(fit_batch)[1], model.run_with_cache(score_batch)[1])
    rows = []
    for variable in probed_variables(algorithm):
        metric = metric_of(algorithm, variable)
        steps, targets, found = _reads(caches, fit_batch, score_batch, variable, reads)
        for step in ["all", *sorted(set(steps.tolist()))]:
            keep = np.full(steps.shape, True) if step == "all" else steps == step
            scores = {
                column: r_squared(read[keep], targets[keep])
                if metric == "r2"
                else float(read[keep].mean())
                for column, read in found.items()
            }
            rows.append(
                {
                    "variable": variable,
                    "metric": metric,
                    "step": step,
                    "rows": int(keep.sum()),
                    **scores,
                }
            )
    return rows
