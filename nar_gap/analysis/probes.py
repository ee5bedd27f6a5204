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
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

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
      candidates: for a pointer, ``[M, N, D]`` the hidden states of the
        row's graph's nodes at the same step, and ``candidate_mask``
        ``[M, N]`` its real ones; None otherwise.
    """

    kind: str
    features: np.ndarray
    targets: np.ndarray
    candidates: np.ndarray | None = None
    candidate_mask: np.ndarray | None = None


def probed_variables(algorithm: str) -> tuple[str, ...]:
    """``algorithm``'s node hints a probe can read (every node-located hint)."""
    return tuple(
        name
        for name, (stage, loc, typ) in get_spec(algorithm).items()
        if stage == Stage.HINT and loc == Location.NODE and typ in PROBED_TYPES
    )


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
    lengths = np.asarray(batch.lengths)
    node_mask = np.asarray(batch.node_mask, bool)
    counted = (np.arange(steps)[:, None] < (lengths - 1)[None, :])[:, :, None]
    rows = counted & node_mask[None]  # [S, B, N]
    candidates = candidate_mask = None
    if kind == Type.POINTER:
        step, graph, _ = np.nonzero(rows)
        candidates = hiddens[step, graph]  # [M, N, D]
        candidate_mask = node_mask[graph]
    return ProbeRows(
        kind,
        hiddens[rows],
        hint[rows],
        candidates,
        candidate_mask,
    )


@dataclasses.dataclass(frozen=True)
class ProbeFit:
    """A fitted probe: its form, parameters and the scalar target's scale."""

    form: str
    kind: str
    params: Any
    centre: float = 0.0
    scale: float = 1.0


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
        return {
            **body,
            "query": dense(keys[1], size, width),
            "key": dense(keys[2], size, width),
        }
    return {**body, "out": dense(keys[3], size, out)}


def _embed(params: Any, x: jax.Array) -> jax.Array:
    if "hidden" in params:
        x = jax.nn.relu(x @ params["hidden"]["w"] + params["hidden"]["b"])
    return x


def _logits(params: Any, kind: str, x: jax.Array, cand: Any, cmask: Any) -> jax.Array:
    """Per row: ``[M]`` (mask, scalar), ``[M, C]`` or ``[M, N]`` (pointer)."""
    h = _embed(params, x)
    if kind == Type.POINTER:
        q = h @ params["query"]["w"] + params["query"]["b"]
        k = _embed(params, cand) @ params["key"]["w"] + params["key"]["b"]
        scores = jnp.einsum("mf,mnf->mn", q, k)
        return jnp.where(cmask, scores, -1e9)
    out = h @ params["out"]["w"] + params["out"]["b"]
    return out if kind == Type.CATEGORICAL else out[:, 0]


def _loss(params: Any, kind: str, rows: dict[str, jax.Array]) -> jax.Array:
    logits = _logits(params, kind, rows["x"], rows["cand"], rows["cmask"])
    y = rows["y"]
    if kind in (Type.MASK, Type.MASK_ONE):
        return optax.sigmoid_binary_cross_entropy(logits, y).mean()
    if kind == Type.CATEGORICAL:
        return optax.softmax_cross_entropy(logits, y).mean()
    if kind == Type.POINTER:
        return optax.softmax_cross_entropy_with_integer_labels(
            logits, y.astype(jnp.int32)
        ).mean()
    return jnp.mean((logits - y) ** 2)


def _device_rows(rows: ProbeRows, target: np.ndarray) -> dict[str, Any]:
    empty = np.zeros((len(target), 1, 1), np.float32)
    return {
        "x": jnp.asarray(rows.features, jnp.float32),
        "y": jnp.asarray(target, jnp.float32),
        "cand": jnp.asarray(empty if rows.candidates is None else rows.candidates),
        "cmask": jnp.asarray(
            np.ones((len(target), 1), bool)
            if rows.candidate_mask is None
            else rows.candidate_mask
        ),
    }


def fit_probe(
    rows: ProbeRows,
    form: str = "linear",
    width: int = 32,
    steps: int = 500,
    learning_rate: float = 1e-2,
    seed: int = 0,
) -> ProbeFit:
    """Fit a ``form`` probe on ``rows`` (full batch, Adam, ``steps`` steps)."""
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
    data = _device_rows(rows, target)
    params = _init(form, rows.kind, rows, width, jax.random.PRNGKey(seed))
    optimizer = optax.adam(learning_rate)

    @jax.jit
    def train(params: Any) -> Any:
        def step(carry: tuple, _: None) -> tuple:
            p, state = carry
            grads = jax.grad(_loss)(p, rows.kind, data)
            updates, state = optimizer.update(grads, state, p)
            return (optax.apply_updates(p, updates), state), None

        (fitted, _), _ = jax.lax.scan(
            step, (params, optimizer.init(params)), None, steps
        )
        return fitted

    return ProbeFit(form, rows.kind, jax.device_get(train(params)), centre, scale)


def score_probe(fit: ProbeFit, rows: ProbeRows) -> float:
    """Accuracy (masks, categorical, pointers) or R² (scalars) on ``rows``."""
    if fit.kind != rows.kind:
        raise ValueError(f"a {fit.kind} probe cannot score {rows.kind} rows")
    data = _device_rows(rows, rows.targets)
    logits = np.asarray(
        _logits(fit.params, fit.kind, data["x"], data["cand"], data["cmask"])
    )
    y = rows.targets
    if fit.kind in (Type.MASK, Type.MASK_ONE):
        return float(np.mean((logits > 0) == (y > 0.5)))
    if fit.kind == Type.CATEGORICAL:
        return float(np.mean(logits.argmax(-1) == y.argmax(-1)))
    if fit.kind == Type.POINTER:
        return float(np.mean(logits.argmax(-1) == y))
    predicted = logits * fit.scale + fit.centre
    total = float(np.sum((y - y.mean()) ** 2))
    return 1.0 - float(np.sum((y - predicted) ** 2)) / total if total else float("nan")
