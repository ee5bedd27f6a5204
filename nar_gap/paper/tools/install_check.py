"""``nar-gap check-install``: does nar_gap work here? Each layer once, timed.

A user arriving on a new machine (a GPU node with its own JAX, an offline
node installed from the bundle, a laptop) wants one command that exercises
what the notebooks will: the backend self-check, dm-clrs's samplers for every
algorithm, the compiled BFS, Bellman-Ford and DFS checked against dm-clrs's
reference traces on every hint and output, a short training run, and the
faithfulness measures on it. Each stage prints its time; the first failure
ends the check with one line and a non-zero exit. The report says whether
TensorFlow was loaded (nar_gap never needs it) and on which devices JAX ran.

The training stage is a real :func:`nar_gap.training.train` run, just small
(two seeds, 5-node graphs, 20 steps), so it exercises the jitted multi-seed
step, checkpoints and selection, not a stand-in for them.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from nar_gap.system.files import write_json_atomic

#: The compiled algorithms checked against dm-clrs, and the graph size used.
COMPILED_CHECKS: tuple[str, ...] = ("bfs", "bellman_ford", "dfs")
CHECK_NODES = 8
CHECK_GRAPHS = 4


class InstallCheckError(RuntimeError):
    """A stage of the check failed; the message is the one line to print."""


@dataclasses.dataclass(frozen=True)
class StageResult:
    """One stage's name, wall time and what it found."""

    name: str
    seconds: float
    detail: str


def _backend() -> str:
    import jax

    from nar_gap.system.backend_check import self_check

    verdict = self_check()
    if not verdict.ok:
        raise InstallCheckError(verdict.message.splitlines()[0])
    devices = jax.devices()
    kinds = sorted({d.device_kind for d in devices})
    return (
        f"jax {jax.__version__} on {jax.default_backend()} "
        f"({len(devices)} x {', '.join(kinds)}); self-check passed"
    )


def _sampling() -> str:
    from nar_gap.tasks.sampling import sample_batch, train_batch
    from nar_gap.tasks.specs import ALGORITHMS

    for algorithm in ALGORITHMS:
        train_batch(algorithm, seed=0, step=0)
        sample_batch(algorithm, CHECK_NODES, CHECK_GRAPHS, seed=0)
    return f"{len(ALGORITHMS)} algorithms: {', '.join(ALGORITHMS)}"


def _compiled() -> str:
    from nar_gap.compiler.compiling import compile_algorithm
    from nar_gap.tasks.sampling import sample_batch

    sizes = []
    for algorithm in COMPILED_CHECKS:
        model = compile_algorithm(algorithm, hidden_size=None, num_nodes=CHECK_NODES)
        batch = sample_batch(algorithm, CHECK_NODES, CHECK_GRAPHS, seed=1)
        mismatches = model.check(batch)
        if mismatches:
            raise InstallCheckError(
                f"compiled {algorithm} differs from dm-clrs on {len(mismatches)} "
                f"values; first: {mismatches[0]}"
            )
        sizes.append(f"{algorithm} (hidden {model.layout.hidden_size})")
    return f"exact on every hint and output: {', '.join(sizes)}"


def _training_config() -> Any:
    from nar_gap.model.config import NetworkConfig
    from nar_gap.training.config import TrainConfig

    return TrainConfig(
        network=NetworkConfig("bfs", hidden_size=8),
        seeds=(0, 1),
        steps=20,
        batch_size=8,
        eval_every=10,
        checkpoint_every=10,
        train_lengths=(5,),
        val_num_nodes=5,
        test_num_nodes=5,
        node_buckets=(5,),
        time_buckets=(8,),
        shape_buckets=(),
    )


def _training(out_dir: Path) -> str:
    from nar_gap.training.run import train

    result = train(_training_config(), out_dir / "run", progress=False)
    scores = [float(m["test_score"]) for m in result.metrics]
    if not all(0.0 <= s <= 1.0 for s in scores):
        raise InstallCheckError(f"training produced test scores {scores}")
    return f"2 seeds x 20 steps; test scores {', '.join(f'{s:.3f}' for s in scores)}"


def _faithfulness(out_dir: Path) -> str:
    import numpy as np

    from nar_gap.analysis.models import Models, measure_models, reference_attention
    from nar_gap.compiler.compiling import compile_algorithm
    from nar_gap.tasks.sampling import sample_batch

    models = Models.from_run(out_dir / "run")
    batch = sample_batch("bfs", 5, CHECK_GRAPHS, seed=2)
    compiled = compile_algorithm("bfs", hidden_size=None)
    measured = measure_models(models, batch, reference_attention(compiled, batch))
    internal = np.asarray(measured.scalars["internal"])
    if not np.all(np.isfinite(internal)):
        raise InstallCheckError(f"internal faithfulness is not finite: {internal}")
    return "internal distance per seed " + ", ".join(f"{x:.3f}" for x in internal)


def stages(out_dir: Path) -> Iterator[tuple[str, Callable[[], str]]]:
    """The stages in order, each a name and a function returning its detail."""
    yield "backend", _backend
    yield "sampling", _sampling
    yield "compiled", _compiled
    yield "training", lambda: _training(out_dir)
    yield "faithfulness", lambda: _faithfulness(out_dir)


def run_check(out_dir: Path, echo: Callable[[str], None] = print) -> list[StageResult]:
    """Run every stage, echoing each as it ends; raises at the first failure."""
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for name, stage in stages(out_dir):
        start = time.perf_counter()
        try:
            detail = stage()
        except InstallCheckError:
            raise
        except Exception as error:  # noqa: BLE001 - one line, then the cause
            first = str(error).splitlines()[0] if str(error) else ""
            raise InstallCheckError(
                f"{name}: {type(error).__name__}: {first}"
            ) from error
        result = StageResult(name, time.perf_counter() - start, detail)
        echo(f"  {name:<13} {result.seconds:7.1f} s  {detail}")
        results.append(result)
    return results


def report(results: list[StageResult]) -> dict[str, Any]:
    """The check's JSON: stages, TensorFlow's absence, versions."""
    from nar_gap.system import provenance

    return {
        "stages": [dataclasses.asdict(r) for r in results],
        "tensorflow_loaded": "tensorflow" in sys.modules,
        "versions": provenance.versions(),
    }


def main(out_dir: str | os.PathLike) -> int:
    """``nar-gap check-install``: exit 0 when every stage passed."""
    out = Path(out_dir)
    print(f"nar_gap: checking this installation (work files in {out})")
    start = time.perf_counter()
    try:
        results = run_check(out)
    except InstallCheckError as error:
        print(f"nar-gap: check-install failed: {error}", file=sys.stderr)
        return 1
    summary = report(results)
    loaded = "loaded" if summary["tensorflow_loaded"] else "not loaded"
    print(
        f"nar_gap: every stage passed in {time.perf_counter() - start:.1f} s "
        f"(TensorFlow {loaded})"
    )
    write_json_atomic(out / "check-install.json", summary)
    return 0
