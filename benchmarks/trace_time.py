"""What tracing a forward pass and a training step costs, against Flax's own check.

The network's layers check the parameters ``apply`` is given by their shape
(:class:`nar_gap.model.layers.ShapeChecked`); Flax's ``param`` traces each
parameter's initialiser under ``jax.eval_shape`` to find it.  Tracing, not
running: a compiled model traced again at every new graph size, a training
step at every new configuration and batch shape, is tracing most of the
time at small sizes (tests, the smoke profile, a size sweep).  The
reference is Flax's ``param`` put back in the same process, measured in the
same run, the two taking turns.  Two cases each:

* ``new size``: a graph size after another was traced (JAX's caches of the
  pieces inside, such as the random draws, warm): what a size sweep pays;
* ``first``: every cache cleared (``jax.clear_caches``): what a process pays
  for each model's first trace.

Times are CPU seconds (``time.process_time``), medians.  From the repository
root:

    .venv/bin/python benchmarks/trace_time.py
    .venv/bin/python benchmarks/trace_time.py --repeats 15
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable, Iterator

import flax.linen as nn
import jax
import numpy as np

from nar_gap.compiler.compiling import compile_algorithm
from nar_gap.data import sample_batch
from nar_gap.model import layers
from nar_gap.model.config import NetworkConfig
from nar_gap.model.seeds import forward, init_stacked
from nar_gap.training.config import TrainConfig
from nar_gap.training.feed import seed_batches
from nar_gap.training.step import make_optimizer, make_train_step


@contextlib.contextmanager
def flax_check() -> Iterator[None]:
    """Flax's own ``param`` in the network's layers: the reference."""
    ours = layers.ShapeChecked.param
    layers.ShapeChecked.param = nn.Module.param
    try:
        yield
    finally:
        layers.ShapeChecked.param = ours


def _cpu_seconds(call: Callable[[], object], clear: bool) -> float:
    if clear:
        jax.clear_caches()
    start = time.process_time()
    call()
    return time.process_time() - start


def _compiled_cases(algorithm: str) -> dict[str, Callable[[], float]]:
    model = compile_algorithm(algorithm, hidden_size=None)
    step = forward(model.config, True, model.precision)
    sizes = iter(range(10, 10_000))

    def trace(clear: bool) -> float:
        # a new size each time: the jit's own cache never answers
        batch = model.in_dtype(sample_batch(algorithm, next(sizes), 4, seed=1))
        with model.numerics():
            return _cpu_seconds(lambda: step.trace(model.params, batch), clear)

    return {
        f"compiled {algorithm} forward, new size": lambda: trace(False),
        f"compiled {algorithm} forward, first": lambda: trace(True),
    }


def _training_case() -> dict[str, Callable[[], float]]:
    config = TrainConfig(
        network=NetworkConfig("bfs", hidden_size=16), seeds=(0, 1, 2, 3), steps=10
    )
    batch = seed_batches(config, 0)
    template = jax.tree_util.tree_map(lambda x: x[0], batch)
    params = init_stacked(config.network, template, config.seeds)
    opt_state = jax.vmap(make_optimizer(config).init)(params)
    keys = jax.random.split(jax.random.PRNGKey(0), len(config.seeds))
    step = make_train_step(config)
    return {
        "BFS hidden 16 training step, first": lambda: _cpu_seconds(
            lambda: step.trace(params, opt_state, batch, keys), clear=True
        )
    }


def main() -> None:
    """Time each case with both checks, taking turns, and print the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    cases = {**_compiled_cases("bfs"), **_compiled_cases("dfs"), **_training_case()}
    print(
        f"median CPU seconds of {args.repeats} traces, on {jax.devices()[0].platform}"
    )
    for name, trace in cases.items():
        trace()  # the first trace of anything in the process, not counted
        ours, flax = [], []
        for _ in range(args.repeats):
            ours.append(trace())
            with flax_check():
                flax.append(trace())
        a, b = float(np.median(ours)), float(np.median(flax))
        print(f"{name:42s} shape check {a:6.3f}  Flax's {b:6.3f}  x{a / b:.2f}")


if __name__ == "__main__":
    main()
