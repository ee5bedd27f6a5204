"""What making initial parameters costs a process that meets many batch shapes.

``nar_gap.model.network.initializer`` jits ``init`` on the batch's template
(``init_template``: one graph, one step, four nodes), so a configuration
compiles its ``init`` once, whatever the batches' shapes.  The reference is
``init`` jitted on each batch itself, as it was before, measured in the same
run: the two take turns, from cleared caches (``jax.clear_caches``), with the
persistent compilation cache off, each initialising every configuration
below at every batch shape, as a test session or a study that trains at
several sizes does.  Each pair's parameters are compared bit for bit.

Times are CPU seconds (``time.process_time``), medians.  From the repository
root:

    .venv/bin/python benchmarks/init_compile.py
    .venv/bin/python benchmarks/init_compile.py --repeats 5
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import jax

jax.config.update("jax_enable_compilation_cache", False)

import numpy as np  # noqa: E402

from nar_gap.data import sample_batch  # noqa: E402
from nar_gap.model import network  # noqa: E402
from nar_gap.model.config import NetworkConfig  # noqa: E402

CONFIGS = (
    NetworkConfig("bfs", hidden_size=8),
    NetworkConfig("dfs", hidden_size=8),
    NetworkConfig("bellman_ford", hidden_size=8, use_edge_info=True),
)
SHAPES = ((4, 8), (8, 8), (16, 8), (16, 32))  # (nodes, graphs)


def on_each_batch(config: NetworkConfig) -> Callable:
    """The reference: ``init`` jitted on the batch it is given."""
    model = network.Network(config)
    return jax.jit(
        lambda key, batch: model.init(network.init_rngs(key), batch, repred=False)[
            "params"
        ]
    )


def _run(batches: dict, templated: bool) -> tuple[float, list]:
    jax.clear_caches()
    network.initializer.cache_clear()
    made = []
    start = time.process_time()
    for config in CONFIGS:
        init = network.initializer(config) if templated else on_each_batch(config)
        for batch in batches[config.algorithm]:
            made.append(jax.block_until_ready(init(jax.random.PRNGKey(0), batch)))
    return time.process_time() - start, made


def _same_bits(a: list, b: list) -> bool:
    return all(
        np.array_equal(x, y)
        for tree_a, tree_b in zip(a, b, strict=True)
        for x, y in zip(
            jax.tree_util.tree_leaves(tree_a),
            jax.tree_util.tree_leaves(tree_b),
            strict=True,
        )
    )


def main() -> None:
    """Both ways, taking turns; the median CPU seconds and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    batches = {
        config.algorithm: [
            sample_batch(config.algorithm, nodes, graphs, seed=1)
            for nodes, graphs in SHAPES
        ]
        for config in CONFIGS
    }
    ours, reference = [], []
    for _ in range(args.repeats):
        seconds, made = _run(batches, templated=True)
        ours.append(seconds)
        seconds, expected = _run(batches, templated=False)
        reference.append(seconds)
        assert _same_bits(made, expected), "the template changed the parameters"
    a, b = float(np.median(ours)), float(np.median(reference))
    inits = len(CONFIGS) * len(SHAPES)
    optimised = not jax.config.read("jax_disable_most_optimizations")
    print(
        f"{inits} inits ({len(CONFIGS)} configurations x {len(SHAPES)} batch shapes), "
        f"median CPU seconds of {args.repeats}, on {jax.devices()[0].platform}, "
        f"XLA optimisations {'on' if optimised else 'off'}"
    )
    print(f"on the template {a:6.2f}  on each batch {b:6.2f}  x{a / b:.2f}")


if __name__ == "__main__":
    main()
