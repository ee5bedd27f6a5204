"""What the notebooks' teaching cells call: an equation's code, and knobs to turn.

The notebooks read as a walkthrough of the paper.  Each display equation in
their markdown is followed by a *companion cell* (tagged ``companion``) that
shows the package function computing it (:func:`show_source`) and runs it on
one small graph; ``tests/project/test_notebooks.py`` keeps every companion cell next
to its equation and executable.  The *hands-on* cells (tagged ``hands-on``) are
the ones a student edits and reruns: each calls one small function here, so
the cell stays a line or two and runs in seconds at the default profile.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
import optax
from scipy import stats

from nar_gap.analysis.landscape import filter_normalised_direction, model_loss
from nar_gap.analysis.models import relative_drift
from nar_gap.compiler import compile_algorithm
from nar_gap.compiler.validate import CompileError
from nar_gap.model.model import Model, parameter_count
from nar_gap.paper.experiments.landscape_study import landscape_centres
from nar_gap.paper.report.notebook import show_markdown
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.defaults import GRAD_CLIP_NORM, LEARNING_RATE
from nar_gap.tasks.exactness import Mismatch
from nar_gap.tasks.sampling import sample_batch
from nar_gap.training.step import clipped_optimizer

Params = Any

PACKAGE_ROOT = Path(__file__).resolve().parents[3]  # the folder that holds nar_gap/


def source_location(obj: Any) -> str:
    """``nar_gap/model/gatv2.py:GATv2.__call__`` (a repository path, no machine's)."""
    target = inspect.unwrap(obj)
    path = Path(inspect.getsourcefile(target) or "").resolve()
    try:
        shown = path.relative_to(PACKAGE_ROOT).as_posix()
    except ValueError:  # installed elsewhere: from the package folder down
        parts = path.parts
        shown = (
            "/".join(parts[parts.index("nar_gap") :])
            if "nar_gap" in parts
            else path.name
        )
    return f"{shown}:{getattr(target, '__qualname__', repr(target))}"


def show_source(obj: Any) -> str:
    """Display where ``obj`` lives and its source; return the source.

    An equation's companion cell calls this so the reader sees the lines that
    compute the equation above it, not a paraphrase of them.
    """
    code = inspect.getsource(inspect.unwrap(obj))
    show_markdown(f"`{source_location(obj)}`\n\n```python\n{code}```")
    return code


def compile_at(
    algorithm: str, hidden_size: int | None, graphs: int = 4, num_nodes: int = 16
) -> str:
    """Compile at ``hidden_size`` and check it on sampled graphs: one line of verdict.

    Below the program's smallest size the compiler refuses, and the line says
    which variables and channels did not fit.
    """
    try:
        model = compile_algorithm(algorithm, hidden_size=hidden_size)
    except CompileError as error:
        reasons = [
            line.strip(" -") for line in str(error).splitlines() if "hidden" in line
        ]
        return f"hidden {hidden_size}: refused: {'; '.join(reasons) or error}"
    batch = sample_batch(algorithm, num_nodes, graphs, seed=0)
    mismatches = model.check(batch)
    size = model.layout.hidden_size
    verdict = (
        "exact"
        if not mismatches
        else f"{len(mismatches)} mismatches, first {mismatches[0]}"
    )
    return (
        f"hidden {size}: {parameter_count(model.params)} parameters, "
        f"{verdict} on {graphs} graphs of {num_nodes} nodes"
    )


def parameter_paths(params: Params) -> dict[str, tuple[int, ...]]:
    """``{"processor/value/kernel": shape, ...}``: the names :func:`perturbed` takes."""
    flat = jax.tree_util.tree_flatten_with_path(params)[0]
    paths = {}
    for keys, leaf in flat:
        name = "/".join(str(getattr(k, "key", k)) for k in keys)
        paths[name.removeprefix("net/")] = tuple(np.shape(leaf))
    return paths


def perturbed(params: Params, path: str, index: Sequence[int], delta: float) -> Params:
    """A copy of ``params`` with one entry moved by ``delta``.

    ``path`` is a name from :func:`parameter_paths`, ``index`` the entry's
    position in that array.
    """
    shapes = parameter_paths(params)
    if path not in shapes:
        near = [p for p in shapes if p.split("/")[0] == path.split("/")[0]] or list(
            shapes
        )
        raise KeyError(f"no parameter {path!r}; for example {near[:6]}")
    index = tuple(int(i) for i in index)
    shape = shapes[path]
    if len(index) != len(shape) or any(
        not 0 <= i < s for i, s in zip(index, shape, strict=True)
    ):
        raise IndexError(f"index {index} is outside {path}'s shape {shape}")

    def move(keys, leaf):
        name = "/".join(str(getattr(k, "key", k)) for k in keys).removeprefix("net/")
        if name != path:
            return leaf
        moved = np.array(leaf, copy=True)
        moved[index] += delta
        return moved

    return jax.tree_util.tree_map_with_path(move, params)


def first_broken(mismatches: Sequence[Mismatch]) -> Mismatch | None:
    """The earliest mismatch: the lowest hint step, outputs (step -1) last."""
    if not mismatches:
        return None
    return min(mismatches, key=lambda m: (m.step < 0, m.step, m.sample, m.probe))


def break_one_weight(
    model: Model, batch: Batch, path: str, index: Sequence[int], delta: float
) -> str:
    """Move one compiled weight and say which hint breaks first, and where."""
    mismatches = model.check(batch, params=perturbed(model.params, path, index, delta))
    first = first_broken(mismatches)
    if first is None:
        return f"{path}{list(index)} + {delta:g}: still exact on every hint and output"
    broken = sorted({m.probe for m in mismatches})
    return (
        f"{path}{list(index)} + {delta:g}: first broken: {first}; "
        f"{len(mismatches)} mismatches in {', '.join(broken)}"
    )


@dataclasses.dataclass(frozen=True)
class LossLine:
    """The training loss along one filter-normalised direction from a centre."""

    alphas: np.ndarray
    losses: np.ndarray

    def rise(self) -> np.ndarray:
        """Loss minus the loss at alpha = 0 (the centre must be among the alphas)."""
        centre = int(np.argmin(np.abs(self.alphas)))
        return self.losses - self.losses[centre]


def loss_along(
    model: Model,
    batch: Batch,
    alphas: Sequence[float],
    direction: Params | None = None,
    seed: int = 0,
) -> LossLine:
    """Loss at ``θ + α d`` for each α along ``direction``.

    ``direction``: a parameter tree (say the first axis of notebook 06's
    plane, ``Centres.directions(label)[0]``); None draws a filter-normalised
    Gaussian one from ``seed``.  Notebook 06 samples a whole plane; one line
    is what a student can walk along in seconds.
    """
    if direction is None:
        direction = filter_normalised_direction(jax.random.PRNGKey(seed), model.params)
    loss = _line_loss(model.config)
    values = np.array(
        [float(loss(model.params, direction, batch, np.float32(a))) for a in alphas]
    )
    return LossLine(np.asarray(alphas, dtype=float), values)


@functools.lru_cache(maxsize=16)
def _line_loss(config: Any):
    """The jitted loss at ``params + alpha * direction``, one per network config.

    Cached so a student's second walk (another centre of the same
    architecture, other alphas) reuses the compiled program.
    """

    def at(params, direction, batch, alpha):
        moved = jax.tree_util.tree_map(lambda c, d: c + alpha * d, params, direction)
        return model_loss(config, moved, batch)

    return jax.jit(at)


@functools.lru_cache(maxsize=8)
def centres_for(profile: Any, algorithm: str, dirs: Any) -> Any:
    """:func:`~nar_gap.paper.experiments.landscape_study.landscape_centres`, read once.

    Reading a finished run's seeds and building the centres takes seconds;
    the hands-on cell of notebook 06 calls this so that changing the centre
    or the step sizes reruns in seconds.
    """
    return landscape_centres(profile, algorithm, dirs, progress=False)


@dataclasses.dataclass(frozen=True)
class StepReport:
    """One point of :func:`train_on`: where training stands after ``step`` updates."""

    step: int
    loss: float
    drift: float  # ‖θ − θ_c‖ / ‖θ_c‖
    first_broken: Mismatch | None

    def __str__(self) -> str:
        broken = (
            "exact"
            if self.first_broken is None
            else f"first broken: {self.first_broken}"
        )
        return (
            f"step {self.step:3d}: loss {self.loss:.4g}, "
            f"drift {self.drift:.2e}, {broken}"
        )


def train_on(
    model: Any,
    batch: Batch,
    steps: Sequence[int],
    learning_rate: float = LEARNING_RATE,
    clip: float = GRAD_CLIP_NORM,
) -> list[StepReport]:
    """Adam (with CLRS's gradient clipping) from a compiled model, on one batch.

    Reports the loss, the relative parameter drift and the first hint that
    differs from dm-clrs after each number of updates in ``steps``: the
    one-batch, few-step version of notebook 05's experiment.
    """
    optimizer = clipped_optimizer(learning_rate, clip)
    loss_at = jax.jit(lambda p: model_loss(model.config, p, batch))

    @jax.jit
    def update(params, state):
        grads = jax.grad(lambda p: model_loss(model.config, p, batch))(params)
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    params, state, done, reports = model.params, optimizer.init(model.params), 0, []
    for target in sorted(steps):
        while done < target:
            params, state = update(params, state)
            done += 1
        one_seed = jax.tree_util.tree_map(lambda p: np.asarray(p)[None], params)
        drift = float(relative_drift(one_seed, model.params)[0])
        loss = float(loss_at(params))
        reports.append(
            StepReport(done, loss, drift, first_broken(model.check(batch, params)))
        )
    return reports


WORDS_PER_MINUTE = 150  # technical prose with equations; ours, stated in the README


@dataclasses.dataclass(frozen=True)
class ReadingStats:
    """What a notebook asks of its reader: prose, equations, cells to try."""

    words: int  # in markdown cells (equations count as their LaTeX words)
    equations: int  # display equations ($$ ... $$)
    hands_on: int  # cells tagged hands-on
    exercises: int  # "**Exercise k.**" cells

    @property
    def reading_minutes(self) -> int:
        """Minutes to read the prose at :data:`WORDS_PER_MINUTE`, rounded up."""
        return -(-self.words // WORDS_PER_MINUTE)


def reading_stats(path: str | Path) -> ReadingStats:
    """Count a notebook's markdown words, equations, hands-on cells and exercises."""
    import json

    cells = json.loads(Path(path).read_text())["cells"]
    prose = ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
    return ReadingStats(
        words=sum(len(text.split()) for text in prose),
        equations=sum(text.count("$$") // 2 for text in prose),
        hands_on=sum(
            "hands-on" in c.get("metadata", {}).get("tags", []) for c in cells
        ),
        exercises=sum(text.startswith("**Exercise ") for text in prose),
    )


def winners_curse(
    tests: int, seeds: int, draws: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Explorations where nothing differs, and their best test run again.

    Each of ``draws`` explorations runs ``tests`` paired comparisons of
    ``seeds`` differences drawn from one normal law of mean 0 (no arm
    differs from its pair), chooses the one with the smallest two-sided
    signed-rank p, and runs it again, one-sided the way it leaned, on
    ``seeds`` fresh differences.  Returns ``(chosen, fresh)``: the chosen
    two-sided p and the fresh one-sided p of each exploration.  Notebook
    09's first cell: what choosing by p does to p, where nothing is there.
    """
    rng = np.random.default_rng(seed)
    explored = rng.normal(size=(draws, tests, seeds))
    less = stats.wilcoxon(explored, axis=-1, alternative="less").pvalue
    greater = stats.wilcoxon(explored, axis=-1, alternative="greater").pvalue
    two_sided = np.minimum(1.0, 2 * np.minimum(less, greater))
    best = np.argmin(two_sided, axis=-1)
    leaned_less = np.take_along_axis(less < greater, best[:, None], -1)[:, 0]
    fresh = rng.normal(size=(draws, seeds))
    fresh_less = stats.wilcoxon(fresh, axis=-1, alternative="less").pvalue
    fresh_greater = stats.wilcoxon(fresh, axis=-1, alternative="greater").pvalue
    chosen = np.take_along_axis(two_sided, best[:, None], -1)[:, 0]
    return chosen, np.where(leaned_less, fresh_less, fresh_greater)
