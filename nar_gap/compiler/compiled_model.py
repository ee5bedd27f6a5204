"""A compiled model: its parameters, how they were made, and running them on graphs.

:class:`CompiledModel` is a :class:`~nar_gap.model.model.Model` (a network
configuration with its parameters) that also carries its program, layout and
the scale of every selection criterion.  It runs at the highest matmul
precision (so a GPU cannot quietly use TF32: compiled weights reach 1e7), in
its compiler config's dtype (float64 in JAX's x64 mode, switched on for its
own calls only), decodes every step into CLRS form (:func:`decode_trace`) and
compares it with dm-clrs.  :meth:`CompiledModel.run` does so a chunk of steps
at a time (:mod:`~nar_gap.compiler.stepping`), keeping the decoded hints and
near-tie verdicts, and refuses a run that would not fit in memory
(:mod:`~nar_gap.compiler.memory`).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any, ClassVar

import jax
import numpy as np

from nar_gap.compiler.assembly import assemble
from nar_gap.compiler.config import CompilerConfig
from nar_gap.compiler.layout import Layout
from nar_gap.compiler.memory import (
    MemoryEstimate,
    check_fits,
    run_memory,
    steps_before_trace,
)
from nar_gap.compiler.parameters import Params
from nar_gap.compiler.selection import CriterionScale
from nar_gap.compiler.stepping import Stepper
from nar_gap.compiler.ties import (
    NearTie,
    SplitRecorder,
    classify,
    minimise_resolution,
)
from nar_gap.model.config import NetOutput
from nar_gap.model.decoders import postprocess
from nar_gap.model.model import Model
from nar_gap.model.seeds import forward
from nar_gap.programs.dsl import GraphProgram
from nar_gap.programs.interpreter import Trace
from nar_gap.programs.registry import PROGRAMS, get_program
from nar_gap.system.numerics import COMPILED_PRECISION
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.exactness import Mismatch, agrees_with_clrs, compare_with_clrs
from nar_gap.tasks.graphs import GraphInputError, batch_from_graph
from nar_gap.tasks.specs import Type, get_spec, samples_directed


@dataclasses.dataclass(frozen=True)
class CompiledRun:
    """A compiled model's run on one graph, in CLRS encoding.

    Attributes:
      outputs: ``{name: (n,)}`` decoded outputs (pointers as node indices).
      hints: ``{name: (T, n)}``; row 0 is the initial hint as CLRS feeds it,
        rows 1.. the network's decoded predictions; T the reference length.
      attention: ``(S, n, n)`` attention of every step (rows receivers,
        columns senders), ``S = max(1, T - 1)``; None unless the run was
        asked to keep it (``keep_attention``: ``S`` times ``n^2`` floats).
      reference: dm-clrs's hints and outputs for the same graph.
      mismatches: differences from the reference that are errors (empty
        when exact up to near-ties).
      ties: where dm-clrs's choice was decided by a score gap below the
        model's resolution, each with its gap (:mod:`~nar_gap.compiler.ties`).
      compiler_config: the constants the run used (the model's, or a range
        fitted to this graph: :meth:`CompiledModel.fitted`).
      resolution: the smallest score gap the run's Minimise criterion is
        guaranteed to decide (0 for programs that minimise nothing); gaps
        below it are near-ties.
    """

    outputs: dict[str, np.ndarray]
    hints: dict[str, np.ndarray]
    reference: Batch
    mismatches: list[Mismatch]
    attention: np.ndarray | None = None
    compiler_config: CompilerConfig | None = None
    ties: list[NearTie] = dataclasses.field(default_factory=list)
    resolution: float = 0.0


def decode_trace(out: NetOutput, layout: Layout, algorithm: str) -> Trace:
    """A network's raw output as a :class:`Trace` in CLRS encoding.

    Hints and outputs are hard post-processed (pointers as node indices, masks
    thresholded), the hidden state is read through the layout, and each
    receiver's selected sender is its attention's argmax.
    """
    spec = get_spec(algorithm)

    def clrs_value(name: str, raw: jax.Array) -> np.ndarray:
        value = np.asarray(postprocess(spec[name][2], raw, hard=True))
        return value if spec[name][2] == Type.POINTER else value.astype(np.float64)

    hiddens = np.asarray(out.hiddens)
    return Trace(
        variables=layout.variables,
        state=np.stack(
            [hiddens[..., layout.hidden_index(v)] for v in layout.variables], -1
        ),
        selected=np.argmax(np.asarray(out.attention)[:, :, 0], axis=-1),
        hint_preds={n: clrs_value(n, v) for n, v in out.hint_preds.items()},
        outputs={n: clrs_value(n, v) for n, v in out.outputs.items()},
    )


@dataclasses.dataclass(frozen=True)
class CompiledModel(Model):
    """A compiled program: parameters in a nar_gap Network's tree, and their making.

    Attributes:
      config: the ``NetworkConfig`` the parameters are for.
      params: the parameter tree (float32), as ``init_params`` returns it.
      program: the graph program.
      layout: the name of every dimension.
      scales: the logit scale of every selection criterion, with its reason.
      compiler_config: the constants used.
    """

    program: GraphProgram
    layout: Layout
    scales: tuple[CriterionScale, ...]
    compiler_config: CompilerConfig

    precision: ClassVar[str | None] = COMPILED_PRECISION

    @classmethod
    def build(
        cls, program: GraphProgram, hidden_size: int | None, config: CompilerConfig
    ) -> CompiledModel:
        """Compile ``program`` (:func:`~nar_gap.compiler.assembly.assemble`).

        A program built for one graph size (DFS) needs its ids told apart
        on that size only, so it compiles at ``resolution_nodes = N``: every
        id scale shrinks by ``1024 / N``, which keeps its largest logits
        (the call criteria, ~2e5 C's at 1024) where float32 still resolves
        the margin.
        """
        if program.num_nodes is not None:
            config = dataclasses.replace(config, resolution_nodes=program.num_nodes)
        made = assemble(program, hidden_size, config)
        return cls(made.network, made.params, program, made.layout, made.scales, config)

    def fitted(self, batch: Batch) -> CompiledModel:
        """This model, or the same program compiled for ``batch``'s distances.

        A Minimise criterion's logit scale is ``lambda = budget / (max_distance
        + max_weight)``: the distance range trades against resolution under a
        fixed float budget, so no one range suits every graph.  A graph whose
        weights or shortest distances exceed the compiled range gets the
        program compiled again (its parameter tree's shapes are traced once
        per network, :func:`~nar_gap.compiler.parameters.empty_tree`, so that
        is the assembly alone) with the range rounded
        up to a power of two, so graphs of similar reach share constants.  The
        range comes from the graph being run, never from its node count.  A
        program that adds no weights up as lengths (BFS, DFS) has no range to
        fit; one built for a single graph size (DFS) is compiled again for
        the batch's size instead.

        Parameters that are not their program's compilation (edited,
        perturbed, corrupted) are never replaced: such a model runs only
        graphs inside its own range, and others are refused.
        """
        resized = self._resized(batch)
        if resized is not None:
            return resized
        if not self.program.measures_distances:
            return self
        cfg = self.compiler_config
        weight = float(np.max(np.asarray(batch.inputs["A"], np.float64)))
        distance = float(np.max(batch.hints["d"])) if "d" in batch.hints else 0.0
        if weight <= cfg.max_weight and distance <= cfg.max_distance:
            return self
        if not self._is_its_programs_compilation() or not self._rebuildable():
            raise GraphInputError(
                f"the graph needs weights up to {weight:g} and distances up to "
                f"{distance:g}, beyond this model's max_weight={cfg.max_weight:g} "
                f"and max_distance={cfg.max_distance:g}, and its parameters are not "
                "a compilation of a named program (bfs, bellman_ford), so they cannot "
                "be compiled again for it"
            )
        wider = dataclasses.replace(
            cfg,
            max_weight=max(cfg.max_weight, _power_of_two_above(weight)),
            max_distance=max(cfg.max_distance, _power_of_two_above(distance)),
            distance_scale=None,
        )
        program = get_program(
            self.program.name,
            max_weight=wider.max_weight,
            num_nodes=self.program.num_nodes,
        )
        return CompiledModel.build(program, self.layout.hidden_size, wider)

    def _resized(self, batch: Batch) -> CompiledModel | None:
        """For a program built for one size: itself compiled for ``batch``'s.

        None when the program runs every size or is already this size.
        """
        if self.program.num_nodes is None:
            return None
        sizes = sorted({int(k) for k in np.asarray(batch.node_mask).sum(axis=1)})
        if len(sizes) != 1:
            raise GraphInputError(
                f"program {self.program.name!r} is built for one graph size; "
                f"this batch holds graphs of {sizes} nodes: run one size at a time"
            )
        if sizes[0] == self.program.num_nodes:
            return None
        if not self._is_its_programs_compilation() or not self._rebuildable():
            raise GraphInputError(
                f"the graph has {sizes[0]} nodes; this model's program is built for "
                f"{self.program.num_nodes} and its parameters are not a compilation "
                "of a named program, so they cannot be compiled again for it"
            )
        program = get_program(
            self.program.name, self.compiler_config.max_weight, num_nodes=sizes[0]
        )
        return CompiledModel.build(
            program, self.layout.hidden_size, self.compiler_config
        )

    @property
    def dtype(self) -> str:
        """The float it runs in: ``"float32"`` or ``"float64"``."""
        return self.compiler_config.dtype

    @contextlib.contextmanager
    def numerics(self) -> Iterator[None]:
        """JAX's x64 mode for a float64 model, nothing for a float32 one.

        Scoped, not global: trained models and every other JAX caller keep
        float32 (the flag is part of JAX's trace context, so jitted
        functions are traced once per mode).
        """
        if self.dtype == "float64":
            with jax.enable_x64(True):
                yield
        else:
            yield

    def in_dtype(self, batch: Batch) -> Batch:
        """``batch`` with its floats in this model's dtype (pointers stay int)."""
        want = np.dtype(self.dtype)

        def cast(leaf: Any) -> Any:
            dtype = np.dtype(leaf.dtype)
            if dtype.kind != "f" or dtype == want:
                return leaf
            return np.asarray(leaf).astype(want)

        return jax.tree.map(cast, batch)

    def apply(self, batch: Batch, repred: bool = True) -> NetOutput:
        """The forward pass, in this model's dtype and matmul precision."""
        return self._forward(self.params, batch, repred)

    def _forward(self, params: Params, batch: Batch, repred: bool = True) -> NetOutput:
        with self.numerics():
            return forward(self.config, repred, self.precision)(
                params, self.in_dtype(batch)
            )

    def trace(self, batch: Batch, params: Params | None = None) -> Trace:
        """Run on ``batch`` and decode every step into CLRS encoding.

        ``params`` replaces the compiled parameters (a perturbed copy, say).
        """
        self.program.check_size(np.asarray(batch.node_mask).sum(axis=1))
        weights = self.params if params is None else params
        out = self._forward(weights, batch)
        with self.numerics():
            return decode_trace(out, self.layout, self.program.algorithm)

    def check(self, batch: Batch, params: Params | None = None) -> list[Mismatch]:
        """Every difference from dm-clrs's hints and outputs on ``batch``."""
        trace = self.trace(batch, params)
        return compare_with_clrs(trace.hint_preds, trace.outputs, batch)

    def agrees(self, batch: Batch, params: Params | None = None) -> bool:
        """Whether :meth:`check` finds nothing, without writing its report.

        A minimality search asks this thousands of times, mostly of
        candidates that fail everywhere; their reports were most of the time.
        """
        trace = self.trace(batch, params)
        return agrees_with_clrs(trace.hint_preds, trace.outputs, batch)

    def _is_its_programs_compilation(self) -> bool:
        """Whether ``params`` are exactly what compiling the program gives."""
        own = CompiledModel.build(
            self.program, self.layout.hidden_size, self.compiler_config
        )
        mine, theirs = (
            jax.tree_util.tree_flatten(p) for p in (self.params, own.params)
        )
        if mine[1] != theirs[1]:  # another tree (a corrupted file): not its own
            return False
        return all(
            np.array_equal(np.asarray(a), np.asarray(b))
            for a, b in zip(mine[0], theirs[0], strict=True)
        )

    def _rebuildable(self) -> bool:
        """Whether the program is the registry's for this model's weight range.

        Its gates depend on the weight range, so fitting rebuilds it by name;
        a program written by hand cannot be rebuilt.
        """
        if self.program.name not in PROGRAMS:
            return False
        own = get_program(
            self.program.name,
            self.compiler_config.max_weight,
            num_nodes=self.program.num_nodes,
        )
        return own == self.program

    def graph_batch(self, weights: Any, source: int | None = None) -> Batch:
        """A user's graph as a float64 batch, refused if the program cannot run it.

        ``source`` is required for BFS and Bellman-Ford and refused for DFS.
        Graphs are undirected for the algorithms whose CLRS samplers draw
        symmetric matrices, and may be directed for DFS, as its sampler's are.
        """
        matrix = (
            np.asarray(weights, dtype=np.float64) if _is_numeric(weights) else weights
        )
        # dm-clrs's float64 trace, unrounded: ties and distances are judged
        # against it, and the model rounds its own inputs (in_dtype).
        batch = batch_from_graph(
            self.program.algorithm, matrix, source, float_dtype=np.float64
        )
        a = np.asarray(batch.inputs["A"][0], np.float64)
        directed = samples_directed(self.program.algorithm)
        if not directed and not np.array_equal(a, a.T):
            raise GraphInputError(
                "compiled models run undirected graphs (A == A.T), as the CLRS "
                "samplers draw them; give every edge in both directions"
            )
        return batch

    def run(
        self,
        weights: Any,
        source: int | None = None,
        keep_attention: bool = False,
        max_memory: int | None = None,
    ) -> CompiledRun:
        """Run on one graph: ``weights`` (n, n), 0 = no edge; ``source`` a node.

        BFS and Bellman-Ford take a source; DFS takes none.

        The number of steps is the reference trace's (as CLRS evaluation
        does), so dm-clrs's probing runs alongside and the result carries the
        comparison.  ``keep_attention`` and ``max_memory`` as in
        :meth:`run_batch`; a graph too large for what is known of its run
        before dm-clrs's trace is made (one step; DFS: its whole trace) is
        refused before that trace is made.
        """
        matrix = np.asarray(weights) if _is_numeric(weights) else None
        if matrix is not None and matrix.ndim == 2:
            num_nodes = matrix.shape[0]
            steps = steps_before_trace(self.program.algorithm, num_nodes)
            check_fits(self.memory_needed(num_nodes, steps), max_memory)
        return self.run_batch(
            self.graph_batch(weights, source), keep_attention, max_memory
        )

    def run_batch(
        self,
        batch: Batch,
        keep_attention: bool = False,
        max_memory: int | None = None,
    ) -> CompiledRun:
        """:meth:`run` on a batch of one graph that :meth:`graph_batch` made.

        A float64 batch keeps dm-clrs's float64 reference for ties and
        distances; a float32 model rounds its inputs (only) to float32.
        Sampled (float32) batches run too, against their rounded reference.

        The network runs a chunk of steps at a time
        (:class:`~nar_gap.compiler.stepping.Stepper`): each step's ``N x N``
        attention and logits are reduced to decoded hints and, where a
        pointer differs from dm-clrs's, to a near-tie verdict, then dropped,
        so memory grows with one step's ``N^2``, not the trace's.
        ``keep_attention`` keeps every step's attention
        (``CompiledRun.attention``, ``S x N x N``).  A run
        whose :func:`~nar_gap.compiler.memory.run_memory` exceeds
        ``max_memory`` bytes (default: the memory available now) is refused
        before it starts (:class:`~nar_gap.compiler.memory.RunTooLargeError`).
        """
        model = self.fitted(batch)
        needed = model.memory_needed(
            batch.node_mask.shape[1], trace_steps(batch), keep_attention
        )
        check_fits(needed, max_memory)
        resolution = minimise_resolution(model.scales)
        with model.numerics():
            streamed = _stream(model, batch, resolution, keep_attention)
        hint_preds, outputs, splits, attention = streamed
        errors, ties = classify(
            model.program,
            resolution,
            hint_preds,
            outputs,
            batch,
            compare_with_clrs(hint_preds, outputs, batch),
            splits,
        )
        return CompiledRun(
            outputs={n: v[0] for n, v in outputs.items()},
            hints=_hints_with_initial(batch, hint_preds, self.program.algorithm),
            attention=attention,
            reference=batch,
            mismatches=errors,
            compiler_config=model.compiler_config,
            ties=ties,
            resolution=resolution,
        )

    def memory_needed(
        self,
        num_nodes: int,
        steps: int,
        keep_attention: bool = False,
        as_json: bool = False,
    ) -> MemoryEstimate:
        """:func:`~nar_gap.compiler.memory.run_memory` of a run of this model."""
        itemsize = np.dtype(self.dtype).itemsize
        return run_memory(
            num_nodes, steps, self.config, itemsize, keep_attention, as_json
        )


def trace_steps(batch: Batch) -> int:
    """The hint steps a run of ``batch`` takes: its longest trace less one."""
    return max(1, int(np.asarray(batch.lengths).max()) - 1)


def _stream(
    model: CompiledModel, batch: Batch, resolution: float, keep_attention: bool
):
    """``(hint_preds [S, B, ...], outputs [B, ...], splits, attention)`` of a run.

    Step by step: each step's hints are decoded and kept, its
    attention judged where a pointer differs from dm-clrs's
    (:class:`~nar_gap.compiler.ties.SplitRecorder`), kept only with
    ``keep_attention`` (sample 0, head 0, as ``CompiledRun.attention``), and
    at each sample's output step kept until the outputs are judged.
    """
    recorder = SplitRecorder(model.program, resolution, batch)
    fed = model.in_dtype(batch)
    stepper = Stepper(
        model.config,
        model.params,
        fed,
        model.precision,
        attention=keep_attention or recorder.active,
    )
    steps: dict[str, list[np.ndarray]] = {}
    kept: np.ndarray | None = None
    at_output: dict[int, Any] = {}
    output_index = np.asarray(batch.lengths) - 2
    for out in stepper:
        for name, value in out.hints.items():
            steps.setdefault(name, []).append(value)
        if out.attention is None:
            continue
        recorder.hint_step(out.index, out.hints, _head_mean(out.attention))
        if keep_attention:
            first = np.asarray(out.attention[0, 0])
            if kept is None:  # filled in place: no second copy to stack
                kept = np.empty((stepper.num_steps, *first.shape), first.dtype)
            kept[out.index] = first
        if recorder.active:
            for b in np.flatnonzero(output_index == out.index):
                at_output[int(b)] = out.attention[b]
    outputs = stepper.outputs()
    recorder.output(outputs, lambda b: np.asarray(at_output[b], np.float64).mean(0))
    hint_preds = {name: np.stack(values) for name, values in steps.items()}
    return hint_preds, outputs, recorder.splits, kept


def _head_mean(attention: Any):
    """Sample ``b``'s attention ``[N, N]`` in float64, heads averaged, on demand."""
    return lambda b: np.asarray(attention[b], np.float64).mean(axis=0)


def _hints_with_initial(
    batch: Batch, hint_preds: dict[str, np.ndarray], algorithm: str
) -> dict[str, np.ndarray]:
    """Sample 0's hints: row 0 dm-clrs's initial hint, rows 1.. the model's."""
    num_hints = int(batch.lengths[0])
    spec = get_spec(algorithm)
    hints = {}
    for name, truth in batch.hints.items():
        rows = [np.asarray(truth[0, 0], np.float64)]
        rows += [hint_preds[name][t, 0] for t in range(num_hints - 1)]
        dtype = np.int64 if spec[name][2] == Type.POINTER else np.float64
        hints[name] = np.stack(rows).astype(dtype)
    return hints


def _power_of_two_above(value: float) -> float:
    """The smallest power of two >= ``value`` (1 for values up to 1)."""
    return float(2.0 ** max(0, int(np.ceil(np.log2(max(value, 1e-300))))))


def _is_numeric(weights: Any) -> bool:
    try:
        np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return True
