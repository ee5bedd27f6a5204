"""Named sizes for every experiment: ``smoke``, ``cpu`` (default), ``gpu``, ``paper``.

A notebook or script picks a profile by name and never sets sizes itself, so
the same code runs in CI in seconds, on a 2-core laptop in under an hour, and
at the paper's sizes on an accelerator.  Every results file records the
profile that produced it.

Two scales live in one profile.  The *baselines* (the paper's Table 10, and the
seeds the faithfulness study measures against the compiled model) have their
own seeds, width and steps per algorithm (:class:`Sizes`), because the paper's
central finding is about saturated models: it needs hidden 128 and many
seeds.  Every other trained configuration (the ablations, training on from
compiled) uses ``seeds``, ``hidden_size`` and ``steps``.

The ``cpu`` sizes rest on measurements kept in ``results/``: the validation
curves notebook 02 writes (``validation_<algorithm>.csv``, from step 0) and,
for Bellman-Ford, ``plateau_bellman_ford.csv`` and
``plateau_bellman_ford_edge_info.csv`` (notebook 02's plateau section: each
horizon judged by the slope rule of :func:`nar_gap.analysis.verdicts.plateau`,
over the baseline's own steps at ``cpu``; the ``studies`` profile trains the
seeds on to 1 000 and 600 steps, as the measurement these sizes were chosen
by did). BFS trains 16 seeds for 150 steps: its validation is at the ceiling from the
first evaluation after step 0 on, as the paper's central finding needs.
Bellman-Ford trains 400 steps with fewer seeds to pay for them, and so does its
edge-information arm (the like-for-like pairing with the compiled
Bellman-Ford); its 87 % can be judged only at a plateau, which by the slope
rule no horizon of its measured history reaches, so that row says what it
would take (``decidable_at``) instead of a verdict. The ablations
run at hidden 32 over 4 seeds for 70 steps, training on from compiled over 3
data orders, landscapes on a 7 × 7 grid; notebook 07 trains the first
``closing_gap_seeds`` BFS baseline seeds again with each of its variants
(``long``: twice the steps; Bellman-Ford's in the ``studies`` profile). The
whole profile is sized for an hour on the slower kind of 2-core host, two
notebooks side by side (docs/notebooks.md's profile table gives the
measured time per notebook): BFS's seeds and steps and Bellman-Ford's
seeds were cut to pay for Bellman-Ford's 400 steps, and the notebooks whose
rows the cpu sizes cannot decide (08's TransNAR, 07's Bellman-Ford, 04's
arms in the authors' forms and its DFS pair) run smaller or in the
``studies`` profile.  Measured on that kind of host from a
fresh clone at 20bc097 (a 2-core AMD EPYC with AVX2): 54 min 29 s, within
the hour (61 min 38 s at f60d536, before two speed-ups). ``paper`` is
the paper's setting (128 seeds, 10 000 steps, hidden 128, 1024 minimal seeds,
50 000 extended steps) and is meant for a GPU.

``gpu`` sits between them: one 10-minute job on one H100 sized for 8 minutes as
``nar-gap plan --profile gpu --target h100`` prices it.  It runs notebooks
02 and 03 only, with the runs whose rows more seeds and steps decide (the
``decidable_at`` of the cpu results) grown, in the order of value: Table 1
and section 4.5 (BFS at the paper's 128 seeds of hidden 128), then
Bellman-Ford's Table 10 row and its like-for-like edge-information arm at a
plateau; DFS comes along at hidden 128.  The other notebooks' rows stay the
cpu run's: at a stated 20 s per compiled program, notebook 04's tables do
not fit beside them (the sizes' comments say why each is what it is).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from nar_gap.model.config import NetworkConfig
from nar_gap.system.files import DEFAULT_FIGURE_FORMATS, cell_value, read_table
from nar_gap.tasks.defaults import (
    BATCH_SIZE,
    HIDDEN_SIZE,
    LEARNING_RATE,
    TRAIN_LENGTHS,
    TRAIN_STEPS,
)
from nar_gap.training import TrainConfig

SEQUENTIAL_ALGORITHMS = ("dfs", "bfs_seq", "dfs_light")
# The profile whose figures and tables are committed in results/ and figures/.
DEFAULT_PROFILE = "cpu"


@dataclasses.dataclass(frozen=True)
class Sizes:
    """How one trained configuration is sized: seeds, width, steps."""

    seeds: int
    hidden_size: int
    steps: int


@dataclasses.dataclass(frozen=True)
class LongTraces:
    """Graphs with long traces, for notebook 03 (``experiments/trace_graphs.py``).

    CLRS's test graphs (N = 64, p = 0.5) give BFS traces of 2-3 counted
    steps, so its trace measures read one or two steps before the output;
    paths and grids of ``num_nodes``, searched from one end, give tens.

    Attributes:
      num_nodes: every graph's size (one size: one compile per model).
      families: :data:`nar_gap.tasks.families.FAMILIES` names.
      graphs: graphs per family, node ids shuffled differently in each.
    """

    num_nodes: int
    families: tuple[str, ...] = ("path", "grid")
    graphs: int = 4


@dataclasses.dataclass(frozen=True)
class Studies:
    """How big the studies beyond a notebook's first sections run.

    The recipe, drift and generalisation study (notebook 07), the size sweep
    (notebook 01) and the plateau measurement (notebook 02) once ran by
    ``python -m`` outside ``./run_all.sh``, because at their full sizes they
    do not fit the cpu hour.  Now each is a section of its notebook, sized
    here: small in ``cpu``, full in the ``studies`` profile (and ``paper``).

    Attributes:
      recipe_algorithms: the algorithms notebook 07's recipes train on.
      recipe_seeds: the first seeds of the algorithm's baseline each recipe
        trains (fewer where the baseline has fewer); the generalisation
        study measures the same seeds.
      recipes: :data:`~nar_gap.paper.experiments.recipes.RECIPES` names; empty:
        ``recipes.studied(algorithm)``, every recipe the study was built for.
      drift_steps: steps the pair ``recipes.closest_pair`` picks is trained
        on without supervision (0: no drift section), measured every
        ``drift_every``.
      size_sweep_sizes, size_sweep_families: the compiled models' size sweep
        (empty: every size, every family it was built for,
        ``size_sweep.SIZES`` and ``SWEEP_FAMILIES``).
      ood_sizes, ood_families: the generalisation study's test sizes (16,
        the largest training size, among them) and graph families (empty:
        ``generalisation.SIZES``, every family of the sweep).
      plateaus: ``(algorithm, edge_info, horizon)``: a baseline arm trained
        to ``horizon`` steps and each shorter horizon judged by the plateau
        rule; horizon 0 is the baseline's own steps, whose run notebook 02
        has trained already (nothing is trained again); a longer one
        continues it.
      self_row_graphs: graphs per family of the self-row study
        (``recipes.run_self_rows``); 0: notebook 07 shows the committed rows.
      tie_seeds: seeds per arm of notebook 07's tie test (section 6c,
        ``tie_test``), trained in runs of ``recipe_seeds`` (the first of them
        the recipe study's, read back); at least ``recipe_seeds``.
      family_graphs: graphs of each family and size that the generalisation
        study, 6b (``path_pointers``), 6c (``tie_test``), notebook 09 and the
        causal gap measure on.  One number for all of them, so 6c's first
        seeds count on 6b's own grids.
      confirm_seeds: seeds per arm of each round of notebook 09's
        confirmation (``confirmation``), a block from
        ``confirmation.first_seed`` that no other study trains, in runs of
        ``recipe_seeds``; empty: no block, and notebook 09 shows the
        committed rows (a block too small to confirm anything is not worth
        the cpu hour's minutes).
      count_draws: resampled seed sets per count tried where 6c
        (``tie_test``) counts the seeds an undecided test would need; None:
        :data:`~nar_gap.analysis.power.RESAMPLED_DRAWS` (the power's
        standard error about 0.02), read where the count runs, so that
        importing the profiles does not import scipy.stats (0.7 s of every
        ``run_all.sh`` and CLI start).  ``smoke`` draws fewer (its counts,
        on two seeds, only run the code).
    """

    recipe_algorithms: tuple[str, ...] = ("bfs",)
    recipe_seeds: int = 2
    recipes: tuple[str, ...] = ("plain", "attention_w10")
    drift_steps: int = 0
    drift_every: int = 25
    size_sweep_sizes: tuple[int, ...] = (16,)
    size_sweep_families: tuple[str, ...] = ()
    ood_sizes: tuple[int, ...] = ()
    ood_families: tuple[str, ...] = ()
    plateaus: tuple[tuple[str, bool, int], ...] = ()
    self_row_graphs: int = 0
    tie_seeds: int = 0
    family_graphs: int = 8
    confirm_seeds: tuple[int, ...] = ()
    count_draws: int | None = None


@dataclasses.dataclass(frozen=True)
class Profile:
    """Sizes of one profile.

    Attributes:
      name: ``smoke``, ``cpu`` or ``paper``.
      seeds: seeds per trained configuration that is not a baseline
        (ablations, training on from compiled).
      steps: training steps per seed of those configurations.
      hidden_size: hidden width of those configurations.
      batch_size: samples per step.
      train_lengths: training graph sizes.
      val_num_nodes, test_num_nodes: evaluation graph sizes (16 and 64 are
        exactly CLRS-30's splits).
      eval_every: validation period.
      eval_graphs: graphs of each evaluation split that training validates
        and tests on (0: the whole split, CLRS's 32); a dry run keeps a few.
      node_buckets, time_buckets, shape_buckets: shape padding (few shapes =
        few compiles; see :class:`~nar_gap.training.TrainConfig`).  smoke pads
        to one shape; cpu and paper use TrainConfig's shape buckets.
      minimal_seeds: seeds of the hidden-4 "lottery ticket" runs.
      long_steps: steps of the extended-training (grokking) run.
      stability_orders: data orders (seeds) when training on from compiled.
      stability_points: evenly spaced evaluations along that training.
      stability_early: evaluations at steps 1, 2, 4, ... before those (the
        collapse from compiled happens in the first steps).
      stability_controls: ``(optimizer, learning_rate)`` pairs trained on
        from compiled besides the paper's Adam at 1e-3: smaller Adam steps and
        SGD tell a sharp minimum from Adam's per-parameter step acting on
        weights of 1e7 scale.  ``smoke`` has none (CI's budget; the same code
        runs the paper's setting there).
      landscape_points: grid side of a loss landscape.
      same_class_steps: steps of notebook 06's learned minimum of the
        compiled network's class (the compiled architecture from random
        init, ``stability_orders`` seeds); 0: ``steps``, which is notebook
        05's ``random`` run, read back.  A hidden-7 network without layer
        norm needs longer than a baseline to solve BFS.
      faithfulness_graphs: graphs of the faithfulness batch (test split: 32).
      exactness_sizes: graph sizes of notebook 01's exactness table.
      sequential_lengths: training sizes of the sequential algorithms (dfs,
        bfs_seq, dfs_light), whose traces grow with N (DFS: 3N steps), so a
        CPU profile trains them on smaller graphs than the parallel ones.
      baselines: the baselines' sizes per algorithm, as ``(algorithm,
        Sizes)`` pairs; an algorithm not named uses ``seeds``,
        ``hidden_size`` and ``steps``.  The faithfulness study measures
        these seeds.
      closing_gap_seeds: how many of the baseline seeds notebook 07 trains
        again with each recipe (the first ones; its ``plain`` row is the
        baselines' run restricted to them).
      closing_gap_algorithms: the algorithms notebook 07's four variants
        (its section 2) train on, of those its parameters cell lists.
      closing_gap_long_factor: the ``long`` recipe trains this many times
        the baseline's steps.
      supervision_weight: the weight of the attention and state terms.
      generalisation_sizes: graph sizes notebook 07 tests each recipe at.
      edge_info_baselines: algorithms whose baselines also train the
        paper's modified network (edge information) at the same sizes, for
        notebook 03 to measure against a compiled network that uses edge
        information (Bellman-Ford's) like for like.
      minimal_search_algorithms: the programs notebook 01's minimality
        search runs on (``compiled_minimal.csv``); ``smoke`` keeps BFS alone
        (CI's budget: DFS's search alone takes minutes).
      fork_arms: whether Tables 11 and 13 (notebook 04) have their arms in
        the authors' fork's size-locked definitions (its learned edge map,
        its simplified pointer decoder), trained and tested at one size.
        ``smoke`` has none: each is an architecture of its own, a compile of
        about 20 s on CI's two cores, and tests/model checks the forms;
        nor has ``cpu`` (its rows ask more seeds than it trains).
      long_traces: the long-trace graphs notebook 03 also measures on
        (:class:`LongTraces`): the test split's traces are too short for
        Figures 2 and 4 to show more than the output's step.
      trace_graph_algorithms: the algorithms notebook 03 measures on those
        long traces and on their training distribution besides the test
        split.  ``smoke`` keeps BFS alone: three more compiles per
        algorithm (about 7 s on CI's two cores), the same code for each.
      causal_gap_algorithms: the algorithms notebook 03's causal-gap
        section swaps attention and probes states for
        (:mod:`~nar_gap.paper.experiments.causal_gap`), on their baseline
        seeds.
      causal_probe_seeds: how many of those seeds it probes (every seed
        gets the swaps; a probe per seed and variable is the cost).
      ablation_algorithms: the algorithms of the tables that repeat one
        ablation per algorithm (Tables 14 and 15, D.1).  ``smoke`` keeps BFS
        alone: the other rows are the same code with another algorithm name,
        and CI's budget cannot pay a compile per row; ``cpu`` leaves out DFS.
      figure_formats: the formats every figure is saved in
        (:func:`~nar_gap.system.files.save_figure`; a notebook's setup makes
        them the default).  ``smoke`` writes png alone: CI's budget, each
        format being a full draw of the figure; so does ``gpu``, whose
        archive carries PNGs alone.
      notebooks: the notebooks the profile runs (``"02"`` ...); empty: all.
        A profile sized for one job on an accelerator runs the notebooks
        whose rows its sizes decide; the others' results are the cpu run's.
    """

    name: str
    seeds: int
    steps: int
    hidden_size: int
    batch_size: int
    train_lengths: tuple[int, ...]
    val_num_nodes: int
    test_num_nodes: int
    eval_every: int
    node_buckets: tuple[int, ...]
    time_buckets: tuple[int, ...]
    shape_buckets: tuple[tuple[int, int], ...]
    minimal_seeds: int
    long_steps: int
    stability_orders: int
    stability_points: int
    landscape_points: int
    faithfulness_graphs: int
    exactness_sizes: tuple[int, ...]
    sequential_lengths: tuple[int, ...]
    stability_early: int = 6
    eval_graphs: int = 0
    baselines: tuple[tuple[str, Sizes], ...] = ()
    ablation_algorithms: tuple[str, ...] = ("bfs", "dfs", "bellman_ford")
    notebooks: tuple[str, ...] = ()
    stability_controls: tuple[tuple[str, float], ...] = (
        ("adam", 1e-4),
        ("adam", 1e-5),
        ("sgd", LEARNING_RATE),  # the paper's step size, without Adam
    )
    closing_gap_seeds: int = 2
    closing_gap_algorithms: tuple[str, ...] = ("bfs", "bellman_ford")
    closing_gap_long_factor: int = 2
    supervision_weight: float = 1.0
    generalisation_sizes: tuple[int, ...] = (4, 8)
    edge_info_baselines: tuple[str, ...] = ("bellman_ford",)
    minimal_search_algorithms: tuple[str, ...] = ("bfs", "bellman_ford", "dfs")
    fork_arms: bool = True
    # Paths and grids of 64 nodes: BFS traces of 63 and 14 counted steps.
    long_traces: LongTraces = LongTraces(num_nodes=64)
    trace_graph_algorithms: tuple[str, ...] = ("bfs", "bellman_ford", "dfs")
    causal_gap_algorithms: tuple[str, ...] = ("bfs",)
    causal_probe_seeds: int = 8
    same_class_steps: int = 0
    figure_formats: tuple[str, ...] = DEFAULT_FIGURE_FORMATS
    studies: Studies = Studies()

    def baseline_sizes(self, algorithm: str) -> Sizes:
        """``algorithm``'s baseline sizes (Table 10, the faithfulness study)."""
        named = dict(self.baselines)
        return named.get(algorithm, Sizes(self.seeds, self.hidden_size, self.steps))

    def seed_list(self, count: int | None = None, first: int = 0) -> tuple[int, ...]:
        """``count`` (default: ``seeds``) consecutive seeds from ``first``."""
        return tuple(range(first, first + (self.seeds if count is None else count)))

    def train_config(
        self,
        network: NetworkConfig,
        seeds: tuple[int, ...] | None = None,
        **changes: Any,
    ) -> TrainConfig:
        """A :class:`TrainConfig` at this profile's sizes (``changes`` override)."""
        sequential = network.algorithm in SEQUENTIAL_ALGORITHMS
        fields = {
            "network": network,
            "seeds": self.seed_list() if seeds is None else seeds,
            "steps": self.steps,
            "batch_size": self.batch_size,
            "train_lengths": self.sequential_lengths
            if sequential
            else self.train_lengths,
            "val_num_nodes": self.val_num_nodes,
            "test_num_nodes": self.test_num_nodes,
            "eval_every": self.eval_every,
            "eval_graphs": self.eval_graphs,
            "checkpoint_every": self.eval_every,
            "node_buckets": self.node_buckets,
            "time_buckets": self.time_buckets,
            "shape_buckets": self.shape_buckets,
        }
        fields.update(changes)
        return TrainConfig(**fields)


SMOKE = Profile(  # one graph size and one padded trace length: few compiles
    name="smoke",
    seeds=3,
    steps=16,
    hidden_size=8,
    batch_size=8,
    train_lengths=(4,),
    val_num_nodes=4,
    test_num_nodes=4,
    eval_every=8,
    node_buckets=(4,),
    # Every trace of 4 nodes fits 32 steps (the longest, bfs_seq's, reached 26
    # in 1 280 sampled graphs; DFS's 12, BFS's 4), so each configuration still
    # compiles once.  Padded steps are masked but still executed: at 128 (the
    # first choice, never measured) a warm smoke BFS run took 1.4 s against
    # 0.3 s at 16, and the smoke notebooks, two side by side from a cold cache,
    # 252 s against 223 s at 32 (their cells 428 s against 386 s).
    time_buckets=(32,),
    shape_buckets=(),
    minimal_seeds=3,
    long_steps=24,
    generalisation_sizes=(8,),  # one size: CI's budget (the code is the same)
    stability_orders=2,
    stability_points=2,
    stability_early=1,
    ablation_algorithms=("bfs",),
    minimal_search_algorithms=("bfs",),
    fork_arms=False,  # CI's budget: a compile per arm (tests/model tests them)
    figure_formats=("png",),  # CI's budget: a pdf is a second full draw
    # CI's budget: two 12-node paths (BFS: 11 counted steps; a grid needs 36
    # nodes for 10), and BFS alone measured on them.
    long_traces=LongTraces(num_nodes=12, families=("path",), graphs=2),
    trace_graph_algorithms=("bfs",),
    # CI's budget: no causal-gap section (about 40 s of compiles on CI's two
    # cores); its functions have tests of their own (tests/paper/experiments).
    causal_gap_algorithms=(),
    causal_probe_seeds=1,
    closing_gap_algorithms=("bfs",),  # CI's budget: as cpu (the same code)
    stability_controls=(),
    landscape_points=3,
    faithfulness_graphs=8,
    exactness_sizes=(8,),
    sequential_lengths=(4,),
    # Each study's code path once: two recipes of BFS, a drift of 4 steps,
    # generalisation at 16 nodes and on paths, one family of the sweep at 16
    # nodes, BFS's plateau on its own run.
    studies=Studies(
        drift_steps=4,
        drift_every=2,
        size_sweep_families=("er_p0.5",),
        ood_sizes=(16,),
        ood_families=("path",),
        plateaus=(("bfs", False, 0),),
        self_row_graphs=2,
        # CI's budget: counting on 8 grids of up to 128 nodes, with XLA's
        # optimisations off, was most of notebook 07's tie test and 09's count.
        family_graphs=2,
        confirm_seeds=(2, 2, 2, 2, 2),
        # CI's budget: at 400 resampled sets per count tried, notebook 07's
        # tie test took 25 s on finished runs, at 50 11 s.
        count_draws=50,
    ),
)

CPU = Profile(
    name="cpu",
    seeds=4,
    steps=70,
    hidden_size=32,
    batch_size=BATCH_SIZE,
    train_lengths=TRAIN_LENGTHS,
    val_num_nodes=16,
    test_num_nodes=64,
    eval_every=50,
    node_buckets=(8, 16),
    time_buckets=(),
    # TrainConfig's default shape policy for sizes 4..16.  Padding is masked
    # exactly, and few shapes mean few compiles (each ~10 s on a CPU).
    shape_buckets=((8, 8), (16, 12), (16, 16)),
    minimal_seeds=8,
    long_steps=300,
    stability_orders=3,
    stability_points=4,
    # 7 x 7: the grid is for the figures; notebook 06's rows are judged on
    # the sharpness circles of independent planes (landscape_study).
    landscape_points=7,
    # notebook 06's same-class BFS network at 300 steps: 2 of 3 seeds solve
    # the task (test scores 0.945, 0.956, 0.951; at 70 steps none), 31 s of
    # training on 2 cores.  Bellman-Ford's stays below the bar at 1 000 steps
    # (0.61-0.63), its plateau.
    same_class_steps=300,
    faithfulness_graphs=32,
    exactness_sizes=(16, 64, 256),
    sequential_lengths=(4, 7),
    # 2 seeds of BFS.  Bellman-Ford's variants train at its baseline's 400
    # steps (800 for `long`): in the fresh-clone run at b60dd38 they took
    # about 400 s of notebook 07's 985, which the hour (on the slower 2-core
    # hosts too) cannot pay; the studies profile trains them.
    closing_gap_seeds=2,
    closing_gap_algorithms=("bfs",),
    generalisation_sizes=(16, 64, 256),
    # 04's arms no cpu size decides go to ``studies`` (297 s of the slower
    # host's hour): the fork's arms and Table 14's DFS pair (neither learned).
    fork_arms=False,
    ablation_algorithms=("bfs", "bellman_ford"),
    baselines=(
        # 16 seeds x 150 steps: validation is at its ceiling from the first
        # evaluation on (results/validation_bfs.csv), and the hour pays for
        # Bellman-Ford's steps instead.
        ("bfs", Sizes(seeds=16, hidden_size=HIDDEN_SIZE, steps=150)),
        # 400 steps with 3 seeds, not 32, to pay for the steps; its
        # edge-information arm (edge_info_baselines) the same.  The two-point
        # rule this profile was first sized by accepted 400 steps; the slope
        # rule (verdicts.plateau) accepted no horizon of the curves measured
        # to 1 000 steps (600 for _edge_info; the studies profile's plateau
        # section, committed at 0.1 by a side script): validation still
        # rose, and longer runs do not fit the hour.  Notebook 02's row
        # checks the rule on the run itself and says what a verdict would
        # take.
        # 3 seeds since the slower host kind: no Bellman-Ford row was
        # decided by its seeds (Table 10's needs a plateau; like for like 33).
        ("bellman_ford", Sizes(seeds=3, hidden_size=HIDDEN_SIZE, steps=400)),
        # 3 seeds: DFS's row agrees far from its threshold (accuracy's
        # 95 % interval [0.011, 0.130] over 4 seeds, the ceiling 0.50).
        ("dfs", Sizes(seeds=3, hidden_size=HIDDEN_SIZE, steps=100)),
    ),
    # The studies at the size the hour affords: BFS's recipes plain and
    # attention_w10 on 2 seeds, drifted 50 steps; the sweep to 64 nodes;
    # Bellman-Ford's plateau read off notebook 02's runs (the ``studies``
    # profile runs each at full size).  Bellman-Ford's recipes (like for
    # like, issue 51) cost 1 390 s of notebook 07 on the slower host kind
    # at e09e17a, every answer decided by seeds and steps: ``studies`` only.
    # The self-row study too: 2 seeds decide no paired test.
    studies=Studies(
        recipe_algorithms=("bfs",),
        recipes=("plain", "attention_w10"),
        drift_steps=50,
        size_sweep_sizes=(16, 64),
        plateaus=(("bellman_ford", False, 0), ("bellman_ford", True, 0)),
    ),
)

# The paper's sizes: the cpu profile's evaluation and shapes, scaled up.
PAPER = dataclasses.replace(
    CPU,
    name="paper",
    seeds=128,
    steps=TRAIN_STEPS,
    hidden_size=HIDDEN_SIZE,
    eval_every=500,
    minimal_seeds=1024,
    long_steps=50_000,  # appendix A: "extended training (50 000 steps)"
    stability_orders=8,
    stability_points=10,
    landscape_points=31,
    exactness_sizes=(16, 64, 256, 1024),
    sequential_lengths=TRAIN_LENGTHS,
    closing_gap_seeds=32,
    closing_gap_algorithms=("bfs", "bellman_ford"),
    closing_gap_long_factor=5,  # the paper profile's 50 000 extended steps
    # DFS here alone: a swap one step at a time is a rollout per step in each
    # direction, 1 + T per seed, and DFS's traces are about 3N steps (its
    # section at smoke, 4 nodes, one probed seed: 44 s on 2 cores).
    causal_gap_algorithms=("bfs", "bellman_ford", "dfs"),
    causal_probe_seeds=32,
    fork_arms=True,
    ablation_algorithms=("bfs", "dfs", "bellman_ford"),
    baselines=(),  # every baseline at the paper's 128 seeds, hidden 128, 10 000 steps
)

# One H100 for one 10-minute job: notebooks 02 and 03 with what decides the
# paper's claims grown (the module docstring); `nar-gap plan --profile gpu
# --target h100` prices it.  The seed counts answer the cpu results'
# `decidable_at` (results/paper_vs_ours_*.csv) as far as the minutes go.
GPU = dataclasses.replace(
    CPU,
    name="gpu",
    # Sized by `nar-gap plan --profile gpu --target h100` at the utilisation
    # this profile's first job got on an H200 (nar_gap.paper.tools.plan.Target;
    # benchmarks/results/gpu_h200_job_2026-11-26).  That job ran the sizes
    # committed in results/gpu (BFS 128 x 800, Bellman-Ford 16 x 3 000 in
    # both arms, DFS 16 x 500): notebook 02 alone took 708 s, so the runs
    # below are shorter.  At 20 s per compiled program the compiles are half
    # the minutes: each network config costs three (one training shape, the
    # validation and test scorers), so the profile runs the two notebooks
    # whose rows more seeds decide, and trains on one padded shape.
    # Notebook 04's tables come next in value (Table 11 at hidden 128:
    # 2 x 58 seeds asked) and do not fit with them.
    notebooks=("02", "03"),
    # The causal-gap section came after the job at 39c2445: its gpu rows are
    # computed when the profile next runs (every seed swapped, 32 probed).
    causal_gap_algorithms=("bfs", "bellman_ford"),
    causal_probe_seeds=32,
    # The job's archive carries PNGs alone (its 16 MiB limit): a pdf drawn on
    # the GPU node would stay behind.  Notebooks 02 and 03 draw their figures
    # from the tables, so a pdf is drawn here from the archive if wanted.
    figure_formats=("png",),
    node_buckets=(16,),
    shape_buckets=((16, 16),),
    eval_every=100,  # 13 validations over Bellman-Ford's 1 200 for the slope rule
    sequential_lengths=(7,),
    baselines=(
        # Table 1 and section 4.5: the paper's 128 seeds of hidden 128 (76
        # asked for "nearly perfect"; 222 for Table 1's internal row, beyond
        # the paper's own count).  Steps are what is cut: on the H200 the
        # seeds' mean validation was 0.999 by step 222 and 1.000 by 454
        # (results/gpu/validation_bfs.csv), so 400.
        ("bfs", Sizes(seeds=128, hidden_size=HIDDEN_SIZE, steps=400)),
        # Table 10's 87 % is judged at a plateau, and 3 000 steps on the H200
        # did not reach one (results/gpu/paper_vs_ours_02.csv: the slope
        # still +0.007 over the last 750 steps); no length that fits this job
        # would.  So 1 200 steps, for notebook 03's faithfulness of 16 seeds
        # and the like-for-like edge-information arm (edge_info_baselines),
        # trained the same (42 seeds were asked at 400 steps' effect).
        ("bellman_ford", Sizes(seeds=16, hidden_size=HIDDEN_SIZE, steps=1_200)),
        # DFS agrees at cpu already: 16 seeds at hidden 128, trained on graphs
        # of 7 nodes only (the cpu profile's largest sequential size; traces
        # of about 3N steps pad to one shape: one compile, not two).
        ("dfs", Sizes(seeds=16, hidden_size=HIDDEN_SIZE, steps=200)),
    ),
)

# The studies at full size: every recipe the study was built for on the
# first 8 seeds of each baseline (all 3 of Bellman-Ford's, whose baseline the
# studies profile keeps at cpu's size), a drift of 150 steps, the sweep to
# 4 096 nodes, Bellman-Ford's plateau to 1 000 steps (600 for its
# edge-information arm), and the tie test at 24 seeds per arm (three runs of
# 8; 16 left the twin's contrast with supervised undecided at 2x and 8x,
# where the seeds counted from them were 22 and 23).
FULL_STUDIES = Studies(
    recipe_algorithms=("bfs", "bellman_ford"),
    recipe_seeds=8,
    recipes=(),
    drift_steps=150,
    size_sweep_sizes=(),
    plateaus=(("bellman_ford", False, 1_000), ("bellman_ford", True, 600)),
    self_row_graphs=16,
    tie_seeds=24,
    # Fresh seeds per arm for notebook 09's rounds, resampled from 6c's 24
    # (an overestimate: the cells were chosen for their small p).  Round 1,
    # 24: the one-sided test at Holm's strictest level (0.025) decides its
    # two hypotheses in 84 % and 95 % of draws.  Round 2, 48: its one
    # hypothesis at 0.05 in 91 % (40 seeds: 86 %, 32: 79 %).  Round 3, 48:
    # resampling rounds 1 and 2, both its hypotheses under Holm in 85 %.
    confirm_seeds=(24, 48, 48, 64, 32),
)

# The cpu profile with its studies at full size: the notebooks that hold
# them (01's size sweep, 02's plateau, 04's arms the hour leaves out, 07's
# recipes), hours on 2 cores.
STUDIES = dataclasses.replace(
    CPU,
    name="studies",
    notebooks=("01", "02", "04", "07", "09"),
    studies=FULL_STUDIES,
    closing_gap_algorithms=("bfs", "bellman_ford"),
    fork_arms=True,
    ablation_algorithms=("bfs", "dfs", "bellman_ford"),
)
PAPER = dataclasses.replace(
    PAPER,
    studies=dataclasses.replace(
        FULL_STUDIES, recipe_seeds=32, plateaus=(("bellman_ford", False, 0),)
    ),
)

PROFILES: dict[str, Profile] = {p.name: p for p in (SMOKE, CPU, GPU, PAPER, STUDIES)}
DRY_SUFFIX = "-dry"
# A dry run's training: one step, validated before and after it (each a
# candidate for the selected parameters), a checkpoint, the final test.
DRY_STEPS = 1
DRY_EVAL_GRAPHS = 2


def dry_run(profile: Profile) -> Profile:
    """``profile`` with its training and evaluation cut, its sizes kept.

    The paper profile is days of GPU time, and a shape error in its last
    notebook should cost minutes, not a day.  Seed counts (128 seeds, 1 024
    minimal seeds, 32 recipe seeds), widths, batch shapes, graph sizes and
    evaluation sizes stay, so every code path of the real run executes once
    at the real run's sizes.  What shrinks is what only repeats: steps,
    evaluation graphs (the first ``DRY_EVAL_GRAPHS`` of each split: the
    split's trace length, a smaller batch axis), the landscape grid and the
    stability evaluations (each point is the same program again).  One step
    meets one of the padded training shapes a long run meets (up to three):
    ``nar-gap plan`` compiles every one of them.  Its numbers mean nothing;
    its name (``<profile>-dry``) gives it its own ``build/`` folders, so it
    never resumes or overwrites a real run.
    """
    return dataclasses.replace(
        profile,
        name=profile.name + DRY_SUFFIX,
        steps=DRY_STEPS,
        eval_every=1,
        eval_graphs=DRY_EVAL_GRAPHS,
        long_steps=2 * DRY_STEPS,
        same_class_steps=0,
        faithfulness_graphs=DRY_EVAL_GRAPHS,
        stability_points=2,
        stability_early=1,
        landscape_points=3,
        baselines=tuple(
            (algorithm, dataclasses.replace(sizes, steps=DRY_STEPS))
            for algorithm, sizes in profile.baselines
        ),
    )


def get(name: str) -> Profile:
    """The profile called ``name`` (``<name>-dry``: its :func:`dry_run`).

    An unknown name lists the known ones.
    """
    base = name.removesuffix(DRY_SUFFIX)
    try:
        profile = PROFILES[base]
    except KeyError:
        known = ", ".join([*PROFILES, *(p + DRY_SUFFIX for p in PROFILES)])
        raise ValueError(f"unknown profile {name!r}; known profiles: {known}") from None
    return dry_run(profile) if base != name else profile


@dataclasses.dataclass(frozen=True)
class OutputDirs:
    """Where one profile's runs, tables and figures go.

    ``reading``: the tables and figures are there already (a job's archive,
    or committed results), and the experiments read them back instead of
    training and measuring (a notebook's ``FROM_RESULTS``); the runs are
    not needed.
    """

    runs: Path
    results: Path
    figures: Path
    reading: bool = False

    def read_back(self, name: str, typed: bool = False) -> list[dict[str, Any]]:
        """The rows of results table ``name``; its absence said in one line.

        ``typed``: each cell as the value it was written from
        (:func:`~nar_gap.system.files.cell_value`), where the notebook
        compares or tests them; otherwise text, as written.
        """
        rows = read_table(_written(Path(self.results) / name, "results"))
        if typed:
            return [{k: cell_value(v) for k, v in row.items()} for row in rows]
        return rows

    def figure_back(self, stem: str) -> Path:
        """The PNG of figure ``stem``; its absence said in one line."""
        return _written(Path(self.figures) / f"{stem}.png", "figures")


def _written(path: Path, what: str) -> Path:
    """``path``, which reading needs a run to have written; else one line."""
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: reading results needs this profile's {what} "
            "(a finished run, or a job's archive unpacked by run_all.sh "
            "--results-from)"
        )
    return path


def checkout_root() -> Path:
    """The repository nar_gap runs from, or the working directory if installed."""
    root = Path(__file__).resolve().parents[3]
    if (root / "pyproject.toml").is_file() and (root / "notebooks").is_dir():
        return root
    return Path.cwd()


def committed_dirs(profile: str) -> OutputDirs:
    """Where ``profile``'s committed tables and figures live, relative to the checkout.

    The default profile's are ``results/`` and ``figures/``; another
    profile's, where it has run (the gpu profile, on a lent GPU), are
    ``results/<profile>/`` and ``figures/<profile>/``, copied from its
    job's archive: a notebook shows them beside its own rows.  Nothing
    writes there by default (:func:`output_dirs`).
    """
    get(profile)
    if profile == DEFAULT_PROFILE:
        return OutputDirs(runs=Path(), results=Path("results"), figures=Path("figures"))
    return OutputDirs(
        runs=Path(),
        results=Path("results") / profile,
        figures=Path("figures") / profile,
    )


def committed_results(results: Path) -> list[tuple[str, Path]]:
    """Each profile's committed results folder in ``results``, default first.

    ``results``: the checkout's ``results/`` (or a copy of it).  The default
    profile's tables are in it; another profile's in ``results/<profile>/``
    (:func:`committed_dirs`), listed where that folder exists.
    """
    found = [(DEFAULT_PROFILE, Path(results))]
    for name in PROFILES:
        folder = Path(results) / name
        if name != DEFAULT_PROFILE and folder.is_dir():
            found.append((name, folder))
    return found


def output_dirs(
    profile: str,
    runs: str = "",
    results: str = "",
    figures: str = "",
    reading: bool = False,
    root: Path | None = None,
) -> OutputDirs:
    """The folders of ``profile``: given ones, or the profile's own ("" each).

    ``root``: the checkout they are in (default: the one nar_gap runs from;
    ``run_all.sh`` passes its own folder).

    The committed ``results/`` and ``figures/`` hold the default profile's
    numbers and only that profile writes there; every other profile defaults
    to ``build/<profile>/``, and is refused the committed folders, so a smoke
    run can never overwrite what docs/results.md shows.  Runs default to
    ``build/runs/<profile>``.
    """
    get(profile)  # an unknown profile is an error here too
    root = checkout_root() if root is None else Path(root)
    own = root if profile == DEFAULT_PROFILE else root / "build" / profile
    chosen = OutputDirs(
        runs=Path(runs) if runs else root / "build" / "runs" / profile,
        results=Path(results) if results else own / "results",
        figures=Path(figures) if figures else own / "figures",
        reading=reading,
    )
    if profile != DEFAULT_PROFILE:
        for name in ("results", "figures"):
            if getattr(chosen, name).resolve() == (root / name).resolve():
                raise ValueError(
                    f"{name}/ holds the {DEFAULT_PROFILE} profile's committed "
                    f"{name}; the {profile} profile writes to build/{profile}/{name} "
                    f"(leave the folder empty) or to a folder you name"
                )
    return chosen
