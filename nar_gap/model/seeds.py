"""Parameter sets as arrays: stacking, initialising, one cache of jitted passes.

A run of many seeds keeps one parameter tree whose leaves have a leading seed
axis.  This module holds the few operations on such trees that every layer
above needs, each said once:

* :func:`stack_trees` / :func:`unstack_tree`: seeds in and out of that axis;
* :func:`init_stacked`: every seed's initial parameters, one compilation per
  configuration whatever the number of seeds
  (:func:`nar_gap.model.network.init_params` is its one-seed case);
* :func:`forward`: *the* jitted evaluation-mode forward pass, one bounded
  cache per ``(config, repred, precision)`` -- a notebook that measures dozens
  of configurations must not keep every executable alive, and must not
  recompile on every call either;
* :func:`seed_strategy_for` and :func:`over_seeds`: how a function of one
  seed runs over the seed axis (``vmap`` on accelerators, ``lax.map`` on a
  CPU), said once for training, scoring and measuring;
* :func:`score_seeds`: the CLRS scores of every seed, in chunks.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from nar_gap.model.config import NetOutput, NetworkConfig
from nar_gap.model.network import Network, initializer
from nar_gap.model.scores import score_batch
from nar_gap.tasks.batch import Batch

Params = Any
SEED_STRATEGIES = ("auto", "vmap", "map")


def stack_trees(trees: Sequence[Params]) -> Params:
    """Parameter trees -> one tree with a leading seed axis (host arrays)."""
    return jax.tree_util.tree_map(lambda *xs: np.stack(xs), *trees)


def unstack_tree(tree: Params, index: int) -> Params:
    """Seed ``index`` of a stacked tree (host arrays)."""
    return jax.tree_util.tree_map(lambda x: np.asarray(x[index]), tree)


def num_seeds(tree: Params) -> int:
    """The length of a stacked tree's seed axis."""
    return int(jax.tree_util.tree_leaves(tree)[0].shape[0])


def seed_strategy_for(requested: str, platform: str | None = None) -> str:
    """The seed strategy to run: ``requested``, or for ``"auto"`` the backend's best.

    ``"vmap"`` on accelerators, where one wide program fills the device.  On
    CPU, ``"map"`` (``lax.map``: one seed after another inside one compiled
    program).  Measured on 2 cores, BFS, hidden 128, batch 32:

    * a training step (N = 16, T = 12, 8 seeds): 0.18 s per seed-step with
      ``lax.map``, 0.20 s with eight separately dispatched single-seed steps,
      0.29 s vmapped;
    * scoring 8 seeds on CLRS's test split (N = 64): 0.81 s with ``lax.map``,
      2.79 s vmapped.

    Why vmapping loses on a CPU is not pinned down: the 8-seed working set
    (``[8, B, N, N, D]`` pair tensors, 32 MB each at N = 16) no longer fits in
    cache, and the per-seed matmuls become batched ``dot_general`` calls;
    neither was isolated.
    """
    if requested not in SEED_STRATEGIES:
        raise ValueError(
            f"unknown seed strategy {requested!r}; one of {', '.join(SEED_STRATEGIES)}"
        )
    if requested != "auto":
        return requested
    platform = platform or jax.default_backend()
    return "map" if platform == "cpu" else "vmap"


def each_seed(fn: Callable, strategy: str = "auto") -> Callable:
    """``fn`` of one seed, run over the leading seed axis of every argument.

    ``strategy`` as in :func:`seed_strategy_for` (``vmap``, or ``lax.map``
    one seed after another); the numbers agree to float32 reassociation.
    """
    if seed_strategy_for(strategy) == "vmap":
        return jax.vmap(fn)
    return lambda *stacked: jax.lax.map(lambda args: fn(*args), stacked)


def over_seeds(fn: Callable, strategy: str = "auto") -> Callable:
    """``fn(params, *shared)`` of one seed, run over ``params``' leading seed axis.

    The other arguments are shared by every seed (:func:`each_seed` on
    ``params`` alone).
    """
    return lambda params, *shared: each_seed(lambda p: fn(p, *shared), strategy)(params)


def init_stacked(config: NetworkConfig, batch: Batch, seeds: Sequence[int]) -> Params:
    """Initial parameters of every seed, stacked on axis 0.

    One seed at a time through one jitted ``init``: its compilation (seconds,
    nearly all in the parameters' random initializers) is then shared by every
    seed count of a configuration, where a version vmapped over seeds compiled
    once per count, and compiled slower (4.2 s against 3.1 s at the smoke
    sizes).  The numbers are the same either way: ``vmap`` of JAX's random
    functions draws what each key draws alone.
    """
    init = initializer(config)
    return stack_trees(
        [jax.device_get(init(jax.random.PRNGKey(seed), batch)) for seed in seeds]
    )


@functools.lru_cache(maxsize=32)
def forward(
    config: NetworkConfig, repred: bool = True, precision: str | None = None
) -> Callable[[Params, Batch], NetOutput]:
    """The jitted ``(params, batch) -> NetOutput`` of ``Network(config)``.

    ``repred=True`` is evaluation mode (the model's own predictions fed back);
    ``precision=COMPILED_PRECISION`` keeps a GPU from using TF32 (compiled
    models need it: their weights reach 1e7).
    """
    network = Network(config)

    def apply(params: Params, batch: Batch) -> NetOutput:
        with jax.default_matmul_precision(precision):
            return network.apply({"params": params}, batch, repred=repred)

    return jax.jit(apply)


def in_seed_chunks(
    fn: Callable[[Params], dict[str, Any]], stacked_params: Params, chunk: int
) -> dict[str, np.ndarray]:
    """``fn`` on ``chunk`` seeds at a time, results joined on the seed axis.

    ``fn`` is a vmapped, jitted evaluation over the leading seed axis; chunks
    bound its memory on big graphs.
    """
    total = num_seeds(stacked_params)

    def seeds_from(start: int) -> Params:
        return jax.tree_util.tree_map(
            lambda x: x[start : start + chunk], stacked_params
        )

    pieces = [jax.device_get(fn(seeds_from(s))) for s in range(0, total, chunk)]
    return {k: np.concatenate([np.asarray(p[k]) for p in pieces]) for k in pieces[0]}


@functools.lru_cache(maxsize=16)
def _seed_scorer(config: NetworkConfig, strategy: str) -> Callable:
    scores = over_seeds(functools.partial(score_batch, config), strategy)

    def score_each_seed(params: Params, batch: Batch) -> dict[str, jax.Array]:
        return scores(params, batch)  # named: JAX's compile logs say which

    return jax.jit(score_each_seed)


def score_seeds(
    config: NetworkConfig,
    stacked_params: Params,
    batch: Batch,
    chunk: int = 8,
    strategy: str = "auto",
) -> dict[str, np.ndarray]:
    """Scores of every seed in ``stacked_params`` (leading seed axis) on one batch.

    Seeds are scored ``chunk`` at a time (``strategy`` as in
    :func:`seed_strategy_for`) to bound memory on big graphs; the result has a
    leading seed axis on every entry.
    """
    scorer = _seed_scorer(config, seed_strategy_for(strategy))
    return in_seed_chunks(lambda part: scorer(part, batch), stacked_params, chunk)
