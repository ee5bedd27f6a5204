"""Which part of the mechanistic gap changes the output (beyond the paper).

Notebook 03 measures how far each trained seed's attention is from the
compiled one's (Eq. 24).  This section asks what that distance does, with
interventions on notebook 02's seeds (:mod:`nar_gap.analysis.interventions`)
and probes of their hidden states (:mod:`nar_gap.analysis.probes`), on the
faithfulness graphs:

- **attention**: a seed's test score with the compiled attention patched in
  at every step, and at one step at a time, against its own score; as a
  control that can say the opposite, the same with uniform and self-only
  attention (a seed that keeps its score under those does not use its
  attention at all);
- **attention, in the compiled mechanism**: the compiled network's score
  with each seed's attention patched in;
- **the values attention carries**: whether the seed's hidden state holds
  the algorithm's node variables at the next step (BFS: reached, parent;
  Bellman-Ford: distance, mask and parent; every node hint of
  :func:`~nar_gap.analysis.probes.probed_variables`), read by a linear and,
  separately, a one-hidden-layer probe fitted on other graphs, against the
  same probe on randomly initialised networks (the floor);
- **the decoder**: a linear probe of everything the hint decoder reads,
  against the seed's own decoder on the same rows: a decoder that reads
  less than a linear probe finds loses what its inputs hold.

Discrete variables are scored by accuracy, scalars (Bellman-Ford's ``d``)
by R² (column ``metric``); both are 1 at perfect, so one bound serves.

Each question's answer is a paired effect over seeds with its 95 %
t-interval, judged against :data:`OUTPUT_BOUND`
(:func:`~nar_gap.analysis.verdicts.effect_answer`):
for a swap, "yes" where the interval lies beyond the bound on either side
(the swap changes the score), "no" where it lies inside it; for a probe,
"yes" where it lies above the bound, "no" where below; "inconclusive"
otherwise.  Every row is beyond the paper, and says so.

The same measurement answers issue 33's open question in notebook 07
(:func:`run_path_case`): the supervised recipe, which attends as the
compiled network does on path graphs yet misses answers there, measured on
those paths, and read step by step (:func:`step_sentence`: where its
decoder misses, does a probe of its state still read the variable?).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from nar_gap.analysis import interventions, probes
from nar_gap.analysis.curves import step_means
from nar_gap.analysis.models import RANDOM_INIT_SEEDS, Models
from nar_gap.analysis.verdicts import CHANGES, EXCEEDS, effect_answer
from nar_gap.compiler import DEFAULT_HIDDEN_SIZE, compile_algorithm
from nar_gap.model.model import Model
from nar_gap.model.seeds import init_stacked
from nar_gap.paper import plots
from nar_gap.paper.experiments import generalisation, recipes
from nar_gap.paper.experiments.profiles import OutputDirs, Profile
from nar_gap.paper.experiments.runs import (
    baseline_config,
    faithfulness_batch,
    metadata,
    run_dir,
    train_once,
)
from nar_gap.system import files
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.graphs import family_batch
from nar_gap.tasks.sampling import eval_batch
from nar_gap.training import train

OUTPUT_BOUND = 0.02
"""The smallest change in output score that counts as a change.

About one node of a 64-node test graph (1/64 = 0.016): a swap that moves
the score by less leaves the output as it was."""

NOT_TESTABLE = "not testable"
PROBE_GRAPHS = 16  # the probes' training graphs (the val recipe at the test size)


PATHS = "paths"
"""The path-graph case: notebook 07's supervised recipe on path graphs."""


def _named(kind: str, algorithm: str, case: str) -> str:
    return f"causal_gap{kind}_{algorithm}{'_' + case if case else ''}.csv"


def seeds_file(algorithm: str, case: str = "") -> str:
    """Per seed: its score, with each attention patched in, and the compiled's."""
    return _named("_seeds", algorithm, case)


def steps_file(algorithm: str, case: str = "") -> str:
    """Per seed and hint step: the score with one step's attention swapped."""
    return _named("_steps", algorithm, case)


def probes_file(algorithm: str, case: str = "") -> str:
    """Per model and variable (and step): the probes' and the decoder's accuracy."""
    return _named("_probes", algorithm, case)


def answers_file(algorithm: str, case: str = "") -> str:
    """One row per question: the effect, its interval, the answer."""
    return _named("", algorithm, case)


def figure_stem(algorithm: str, case: str = "") -> str:
    """The study's figure."""
    return f"fig_causal_gap_{algorithm}{'_' + case if case else ''}"


def files_of(algorithm: str, case: str = "") -> list[str]:
    """Every table the study writes for ``algorithm`` (and ``case``)."""
    return [
        f(algorithm, case) for f in (seeds_file, steps_file, probes_file, answers_file)
    ]


def swap_rows(
    seeds: Sequence[tuple[int, Model]],
    compiled: Model,
    batch: Batch,
    progress: bool = True,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per seed and per (seed, step): the scores with attention swapped.

    Both directions: the compiled attention into the seed, the seed's into
    the compiled network; and the controls (uniform, self only) into the
    seed.  One step at a time covers the steps of the batch's rollout.
    """
    compiled_score, compiled_att = interventions.own_attention(compiled, batch)
    num_steps = compiled_att.shape[0]
    controls = interventions.reference_attentions(batch, num_steps)
    each_step = [(t,) for t in range(num_steps)]
    rows, step_rows = [], []
    for seed, model in tqdm(seeds, desc="attention swaps", disable=not progress):
        score, att = interventions.own_attention(model, batch)
        with_compiled = interventions.patched_scores(
            model, batch, compiled_att, [interventions.ALL_STEPS, *each_step]
        )
        compiled_with = interventions.patched_scores(
            compiled, batch, att, [interventions.ALL_STEPS, *each_step]
        )
        rows.append(
            {
                "seed": seed,
                "score": score,
                "with_compiled_attention": with_compiled[0],
                "with_uniform_attention": interventions.patched_scores(
                    model, batch, controls["uniform"]
                )[0],
                "with_self_attention": interventions.patched_scores(
                    model, batch, controls["self only"]
                )[0],
                "compiled_score": compiled_score,
                "compiled_with_seed_attention": compiled_with[0],
            }
        )
        for t in range(num_steps):
            step_rows.append(
                {
                    "seed": seed,
                    "step": t,
                    "with_compiled_attention": with_compiled[1 + t],
                    "compiled_with_seed_attention": compiled_with[1 + t],
                }
            )
    return rows, step_rows


PROBES = probes.STUDY_READS
"""The probe columns of the study's tables."""


def probe_table(
    labelled: Sequence[tuple[str, int, Model]],
    fit_batch: Batch,
    score_batch: Batch,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Each model's rows of :func:`~nar_gap.analysis.probes.probe_scores`.

    ``labelled``: (kind, seed, model), kind ``trained``, ``random init`` or
    ``compiled``; every node variable, each of :data:`PROBES` and the
    model's own decoder.
    """
    return [
        {"model": kind, "seed": seed, **row}
        for kind, seed, model in tqdm(labelled, desc="probes", disable=not progress)
        for row in probes.probe_scores(model, fit_batch, score_batch, PROBES)
    ]


def _probe_limit(reference: Sequence[float]) -> str:
    """A caveat where the probe misses the compiled network's own variable.

    The compiled decoder reads every variable exactly; a probe that reads it
    less from the compiled network's state is weaker than that decoder, and
    a "no" it gives is the probe's limit as much as the state's.
    """
    if not reference or reference[0] >= 1 - OUTPUT_BOUND:
        return ""
    return f"the same probe reads the compiled network's at {reference[0]:.3f}"


def _questions(
    seed_rows: Sequence[Mapping[str, Any]], probe_rows: Sequence[Mapping[str, Any]]
) -> list[tuple[str, str, str, list[float], str, str]]:
    """(part, question, rule, effects, why not testable, caveat) per question.

    A probe question is not testable where its floor already reads the
    variable within the bound of perfect: no state can hold it better.
    """

    def effect(key: str, base: str) -> list[float]:
        return [float(r[key]) - float(r[base]) for r in seed_rows]

    def pooled(kind: str, variable: str, column: str) -> list[float]:
        return [
            float(r[column])
            for r in probe_rows
            if r["model"] == kind and r["variable"] == variable and r["step"] == "all"
        ]

    questions = [
        (
            "attention",
            "does the compiled attention, put in at every step, change a trained "
            "seed's output score?",
            CHANGES,
            effect("with_compiled_attention", "score"),
            "",
            "",
        ),
        (
            "attention (control)",
            "does uniform attention over each neighbourhood change a trained "
            "seed's output score (does the seed use its attention)?",
            CHANGES,
            effect("with_uniform_attention", "score"),
            "",
            "",
        ),
        (
            "attention, in the compiled mechanism",
            "does a trained seed's attention change the compiled network's "
            "output score?",
            CHANGES,
            effect("compiled_with_seed_attention", "compiled_score"),
            "",
            "",
        ),
    ]
    for variable in sorted({r["variable"] for r in probe_rows}):
        questions += _value_questions(variable, pooled)
    return questions


FORMS = {"probe_state": "linear", "probe_state_mlp": "one-hidden-layer"}
"""The probes of ``h`` a question is asked of, and how a question names them."""


def _value_questions(
    variable: str, pooled: Any
) -> list[tuple[str, str, str, list[float], str, str]]:
    """One variable's questions: the values, per probe of ``h``; the decoder.

    ``pooled(kind, variable, column)``: the per-model pooled scores.
    """
    questions = []
    for column, form in FORMS.items():
        floor = pooled("random init", variable, column)
        base = float(np.mean(floor)) if floor else math.nan
        trained = pooled("trained", variable, column)
        questions.append(
            (
                f"the values ({variable}{', MLP' if column.endswith('mlp') else ''})",
                f"does a trained seed's hidden state hold {variable} better than "
                f"a random network's ({form} probes on other graphs)?",
                EXCEEDS,
                [p - base for p in trained],
                (
                    f"the random networks' states already read it at {base:.3f}"
                    if base >= 1 - OUTPUT_BOUND
                    else ""
                ),
                _probe_limit(pooled("compiled", variable, column)),
            )
        )
    inputs = pooled("trained", variable, "probe_inputs")
    decoders = pooled("trained", variable, "decoder")
    questions.append(
        (
            f"the decoder ({variable})",
            f"does a linear probe read {variable} better than the seed's own "
            "decoder, from the same inputs (does the decoder lose it)?",
            EXCEEDS,
            [p - d for p, d in zip(inputs, decoders, strict=True)],
            "",
            _probe_limit(pooled("compiled", variable, "probe_inputs")),
        )
    )
    return questions


def answer_rows(
    seed_rows: Sequence[Mapping[str, Any]], probe_rows: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The questions, each answered from the per-seed tables (module docstring)."""
    rows = []
    for part, question, rule, effects, untestable, caveat in _questions(
        seed_rows, probe_rows
    ):
        answer, mean, low, high = effect_answer(effects, rule, OUTPUT_BOUND)
        answer = NOT_TESTABLE if untestable else answer
        side = f"±{OUTPUT_BOUND:.2f}" if rule == CHANGES else f"+{OUTPUT_BOUND:.2f}"
        rows.append(
            {
                "part": part,
                "question": question,
                "beyond_the_paper": True,
                "rule": rule,
                "effect": mean,
                "low": low,
                "high": high,
                "seeds": len(effects),
                "answer": answer,
                "evidence": (
                    f"mean paired effect {mean:+.3f}, 95% t-interval "
                    f"[{low:+.3f}, {high:+.3f}], n = {len(effects)} seeds; "
                    f"bound {side}"
                    + (f"; not testable: {untestable}" if untestable else "")
                    + (f"; caveat: {caveat}" if caveat else "")
                ),
            }
        )
    return rows


def _probe_batch(profile: Profile, algorithm: str) -> Batch:
    """Graphs the probes fit on: the val recipe at the test size, not the test's."""
    return eval_batch(algorithm, "val", profile.test_num_nodes, PROBE_GRAPHS)


@dataclasses.dataclass(frozen=True)
class Measured:
    """The three tables of one set of seeds, and the answers drawn from them."""

    seeds: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    probes: list[dict[str, Any]]
    answers: list[dict[str, Any]]


def measure(
    models: Models,
    compiled: Model,
    batch: Batch,
    fit_batch: Batch,
    probe_seeds: int,
    progress: bool = True,
) -> Measured:
    """Swaps for every seed of ``models``, probes for the first ``probe_seeds``.

    The floor is the architecture at :data:`RANDOM_INIT_SEEDS` (at most
    ``probe_seeds`` of them), the reference the compiled network.
    """
    seeds = list(zip(models.seeds, models.each(), strict=True))
    seed_rows, step_rows = swap_rows(seeds, compiled, batch, progress)
    floor = RANDOM_INIT_SEEDS[:probe_seeds]
    initial = Models(models.config, init_stacked(models.config, batch, floor), floor)
    labelled = [
        *(("trained", s, m) for s, m in seeds[:probe_seeds]),
        *(("random init", s, m) for s, m in zip(floor, initial.each(), strict=True)),
        ("compiled", -1, compiled),
    ]
    probe_rows = probe_table(labelled, fit_batch, batch, progress)
    answers = answer_rows(seed_rows, probe_rows)
    return Measured(seed_rows, step_rows, probe_rows, answers)


def write(
    measured: Measured,
    algorithm: str,
    case: str,
    dirs: OutputDirs,
    meta: Mapping[str, Any],
) -> None:
    """The four tables and the figure, each named for ``algorithm`` and ``case``."""
    results = Path(dirs.results)
    for name, rows in zip(
        files_of(algorithm, case),
        (measured.seeds, measured.steps, measured.probes, measured.answers),
        strict=True,
    ):
        files.write_table(results / name, rows, meta)
    title = f"{algorithm}{', ' + case if case else ''}"
    means = figure_means(measured.seeds, measured.steps, measured.probes)
    fig = plots.plot_causal_gap(measured.seeds, means, title)
    files.save_figure(fig, Path(dirs.figures) / figure_stem(algorithm, case))
    plots.close(fig)


def _meta(profile: Profile, config: Any, **more: Any) -> dict[str, Any]:
    return metadata(
        profile,
        config=config.to_dict(),
        compiled_hidden_size=DEFAULT_HIDDEN_SIZE,
        output_bound=OUTPUT_BOUND,
        probes={c: list(v) for c, v in PROBES.items()},
        random_init_seeds=list(RANDOM_INIT_SEEDS),
        **more,
    )


def sentence(algorithm: str, answers: Sequence[Mapping[str, Any]]) -> str:
    """The answers in one line, each with its effect and interval (from the table).

    No answers: results read back that hold no causal-gap tables.
    """
    if not answers:
        return (
            f"{algorithm}: these results hold no causal-gap tables (written "
            "before the section existed, or by a run without it); any rows "
            "shown are another profile's"
        )
    parts = [
        f"{r['part']}: {r['answer']} (effect {float(r['effect']):+.3f}, "
        f"[{float(r['low']):+.3f}, {float(r['high']):+.3f}])"
        for r in answers
    ]
    seeds = answers[0]["seeds"] if answers else 0
    return f"{algorithm}, n = {seeds} seeds (beyond the paper): " + "; ".join(parts)


def has_path_case(profile: Profile, algorithm: str) -> bool:
    """Whether notebook 07 measures ``algorithm``'s path-graph case at ``profile``.

    It needs the causal-gap study for ``algorithm`` (one knob for both
    sections), the recipe study's seeds and path graphs in its
    generalisation conditions (:func:`.generalisation.studies_paths`).
    """
    return algorithm in profile.causal_gap_algorithms and (
        generalisation.studies_paths(profile, algorithm)
    )


PROBE_COLUMNS = ("decoder", *PROBES)


def along_the_trace(
    probe_rows: Sequence[Mapping[str, Any]],
) -> dict[str, dict[str, dict[int, float]]]:
    """Per variable and probe column, the trained seeds' mean at each hint step."""
    trained = [
        r for r in probe_rows if r["model"] == "trained" and str(r["step"]) != "all"
    ]
    return {
        variable: {
            column: step_means(
                (r for r in trained if r["variable"] == variable), column
            )
            for column in PROBE_COLUMNS
        }
        for variable in sorted({r["variable"] for r in trained})
    }


def pooled_means(
    probe_rows: Sequence[Mapping[str, Any]],
) -> dict[str, dict[tuple[str, str], float]]:
    """Per variable, ``(model kind, column)``: the mean over that kind's models."""
    pooled = [r for r in probe_rows if str(r["step"]) == "all"]
    found: dict[str, dict[tuple[str, str], list[float]]] = {}
    for r in pooled:
        by_kind = found.setdefault(r["variable"], {})
        for column in PROBE_COLUMNS:
            by_kind.setdefault((r["model"], column), []).append(float(r[column]))
    return {
        variable: {key: float(np.mean(values)) for key, values in by_kind.items()}
        for variable, by_kind in sorted(found.items())
    }


def figure_means(
    seed_rows: Sequence[Mapping[str, Any]],
    step_rows: Sequence[Mapping[str, Any]],
    probe_rows: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """The means over seeds the figure draws bold (the plot only draws)."""
    columns = [k for k in seed_rows[0] if k != "seed"] if seed_rows else []
    return {
        "swaps": {k: float(np.mean([float(r[k]) for r in seed_rows])) for k in columns},
        "steps": {
            k: step_means(step_rows, k)
            for k in ("with_compiled_attention", "compiled_with_seed_attention")
        },
        "probes": pooled_means(probe_rows),
        "along": along_the_trace(probe_rows),
    }


def step_sentence(probe_rows: Sequence[Mapping[str, Any]]) -> str:
    """Where the trained decoders miss, step by step, and what the probes read there.

    Per variable, the steps whose mean decoder score over the trained seeds
    is below ``1 - OUTPUT_BOUND``; at each, the mean of each probe.  A step
    is the decoder's where the inputs' probe reads it within the bound of
    perfect, the state's where both probes of ``h`` (linear and MLP) miss
    it too, and unassigned otherwise.
    """
    parts = []
    for variable, means in along_the_trace(probe_rows).items():
        missed = []
        for step, decoder in means["decoder"].items():
            if decoder >= 1 - OUTPUT_BOUND:
                continue
            linear, mlp = means["probe_state"][step], means["probe_state_mlp"][step]
            inputs = means["probe_inputs"][step]
            whose = (
                "decoder"
                if inputs >= 1 - OUTPUT_BOUND
                else "state"
                if max(linear, mlp) < 1 - OUTPUT_BOUND
                else "unassigned"
            )
            missed.append(
                f"step {step}: decoder {decoder:.3f}, probe of h {linear:.3f} "
                f"(MLP {mlp:.3f}), of its inputs {inputs:.3f} ({whose})"
            )
        found = "; ".join(missed) if missed else "no step below the bound"
        parts.append(f"{variable}: {found}")
    return "Where the decoders miss (means over the trained seeds): " + " | ".join(
        parts
    )


def run_causal_gap(
    profile: Profile, algorithm: str, dirs: OutputDirs, progress: bool = True
) -> list[dict[str, Any]]:
    """Notebook 03's section on ``algorithm``'s baseline seeds: files written.

    Returns the answers (:func:`answer_rows`).  Reading (``dirs.reading``):
    nothing is measured; the answers table is read back, or ``[]`` where
    the results hold none of the section's tables (written before it
    existed, as the gpu job's at 39c2445 were: :func:`sentence` says so).
    Some of its tables without the answers are a one-line error.
    """
    if dirs.reading:
        if not any((Path(dirs.results) / n).is_file() for n in files_of(algorithm)):
            return []
        return dirs.read_back(answers_file(algorithm), typed=True)
    config = baseline_config(profile, algorithm)
    run = train_once(config, dirs.runs, progress)
    batch = faithfulness_batch(profile, algorithm)
    compiled = compile_algorithm(
        algorithm, hidden_size=DEFAULT_HIDDEN_SIZE, num_nodes=batch.num_nodes
    )
    fit_batch = _probe_batch(profile, algorithm)
    measured = measure(
        Models.from_run(run),
        compiled,
        batch,
        fit_batch,
        profile.causal_probe_seeds,
        progress,
    )
    write(
        measured, algorithm, "", dirs, _meta(profile, config, probe_graphs=PROBE_GRAPHS)
    )
    return measured.answers


def run_path_case(
    profile: Profile, algorithm: str, dirs: OutputDirs, progress: bool = True
) -> list[dict[str, Any]]:
    """Notebook 07's path-graph case: the supervised recipe on paths (issue 33).

    The recipe notebook 07's generalisation study chose as supervised
    (:func:`~nar_gap.paper.experiments.generalisation.chosen_recipes`), its
    seeds read back, measured on that study's path graphs; the probes fit
    on other paths.  Its files end in ``_paths``.  Reading: the answers.
    """
    if dirs.reading:
        return dirs.read_back(answers_file(algorithm, PATHS), typed=True)
    supervised, _ = generalisation.chosen_recipes(dirs.results, algorithm)
    recipe = recipes.named([supervised])[0]
    seeds = profile.studies.recipe_seeds
    config = recipes.recipe_config(profile, algorithm, recipe, seeds)
    result = train(config, run_dir(config, dirs.runs), progress=progress)
    nodes, count = generalisation.FAMILY_NODES, profile.studies.family_graphs
    batch = family_batch(algorithm, "path", nodes, count)
    fit_batch = family_batch(algorithm, "path", nodes, PROBE_GRAPHS, first=count)
    compiled = compile_algorithm(
        algorithm, hidden_size=DEFAULT_HIDDEN_SIZE, num_nodes=batch.num_nodes
    )
    probe_seeds = min(seeds, profile.causal_probe_seeds)
    measured = measure(
        Models.from_run(result), compiled, batch, fit_batch, probe_seeds, progress
    )
    meta = _meta(profile, config, recipe=recipe.name, probe_graphs=PROBE_GRAPHS)
    write(measured, algorithm, PATHS, dirs, meta)
    return measured.answers
