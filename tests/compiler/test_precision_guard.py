"""Compiled weights stay exact with JAX's default matmul precision at its lowest.

A GPU honours ``jax.default_matmul_precision``: at "bfloat16" (or its TF32
default) an unguarded matmul of compiled weights (1e7 and more) loses the
margins the compiled decisions rest on.  A CPU computes float32 whatever the
setting, so each test also reads the lowered program: every matmul must ask
for HIGHEST there, on any backend.  Seen failing with
``CompiledModel.precision = None`` (every dot then says DEFAULT).
"""

from __future__ import annotations

import re

import jax
import pytest

from nar_gap.compiler.compiling import compile_algorithm
from nar_gap.model.seeds import forward
from nar_gap.system.numerics import lowest_default_precision, starting_precision
from nar_gap.tasks.sampling import sample_batch

DOT_PRECISION = re.compile(r"precision = \[(\w+), (\w+)\]")


def matmul_precisions(lowered_text: str) -> set[str]:
    return {p for pair in DOT_PRECISION.findall(lowered_text) for p in pair}


@pytest.mark.parametrize("algorithm", ["bfs", "bellman_ford", "dfs"])
def test_compiled_models_stay_exact_at_the_lowest_default_precision(algorithm):
    model = compile_algorithm(algorithm, hidden_size=None, num_nodes=8)
    batch = sample_batch(algorithm, 8, 4, seed=5)
    with lowest_default_precision():
        assert model.check(batch) == []
        run = forward(model.config, True, model.precision)
        lowered = run.lower(model.params, model.in_dtype(batch)).as_text()
    assert matmul_precisions(lowered) == {"HIGHEST"}


def test_an_unguarded_forward_pass_asks_for_the_default_precision():
    """The reading above can say no: the same pass without the guard."""
    model = compile_algorithm("bfs", hidden_size=None)
    batch = sample_batch("bfs", 5, 2, seed=5)
    with lowest_default_precision():
        lowered = forward(model.config, True, None).lower(model.params, batch)
    assert matmul_precisions(lowered.as_text()) == {"DEFAULT"}


def test_training_from_compiled_weights_runs_at_the_highest_precision(monkeypatch):
    """train() enters starting_precision around the whole run: the train step,
    validation and test scoring are all traced inside it."""
    import nar_gap.training.run as run

    seen = []

    def record(config, out, progress, initial_params):
        seen.append(jax.config.jax_default_matmul_precision)

    monkeypatch.setattr(run, "_train", record)
    with lowest_default_precision():
        run.train(None, None, initial_params={"w": 1.0})
        run.train(None, None)
    assert seen == ["highest", "bfloat16"]
    with starting_precision(None):
        assert jax.config.jax_default_matmul_precision is None
