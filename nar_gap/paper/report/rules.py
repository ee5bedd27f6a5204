"""The rules that judge the paper's claims on our results files.

Each public function here is one rule: it reads the results files of one
profile (``results``) and its parameters (an algorithm, a table, the arms a
claim compares, a bound) and returns a :class:`Verdict`, deciding by a stated
statistical test from :mod:`nar_gap.analysis.verdicts`.  Which claim of the
paper each rule checks, with which parameters, is data:
:data:`nar_gap.paper.report.claims.CLAIMS`.  A rule that finds a file, row
or column absent raises :class:`Absent` (or ``FileNotFoundError``), which
:func:`nar_gap.paper.report.paper.comparison` turns into ``not testable
here``, naming the notebook that writes it.

Where the paper gives only words ("no significant correlation", "unstable",
"nearly perfect"), the rule turns them into a test on our numbers and its
criterion says which.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from nar_gap.analysis import verdicts
from nar_gap.analysis.stats import correlation_table
from nar_gap.analysis.verdicts import (
    AGREE,
    DISAGREE,
    INCONCLUSIVE,
    NOT_TESTABLE,
    Judgement,
    Summary,
)
from nar_gap.paper.experiments import (
    ablations,
    baselines,
    compilation,
    faithfulness_study,
    landscape_study,
    profiles,
    stability,
    transnar,
)
from nar_gap.paper.transnar.summary import per_seed
from nar_gap.system import files
from nar_gap.system.files import float_cell
from nar_gap.tasks.defaults import LEARNING_RATE
from nar_gap.tasks.specs import get_spec

PAPER_PROTOCOL = "first_best (CLRS's selection), as the paper"
"""The protocol of a row judged on trained models selected as the paper did."""

DETERMINISTIC = "compiled networks: deterministic, no seeds"

FINAL_CONTROL = "final-step parameters"
"""The controlled protocol: each seed's parameters at its last step, so that
when validation saturates early the selected step cannot decide the row."""


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What our results say about one claim: a summary, the rule, the judgement.

    ``protocol``: how the judged models were selected (and trained), so a
    reader sees what besides the models could decide the row.  ``needs``:
    for an undecided row that more seeds alone would not decide, what would.
    """

    ours: str
    criterion: str
    judgement: Judgement
    protocol: str = PAPER_PROTOCOL
    needs: str = ""


class Absent(Exception):
    """A results file lacks a row or column a check needs (said in words)."""


def _rows(path: Path) -> list[dict[str, str]]:
    rows = files.read_table(path)
    if not rows:
        raise Absent(f"{path.name} has no rows")
    return rows


def _row(path: Path) -> dict[str, str]:
    return _rows(path)[0]


def _field(row: dict[str, str], column: str, table: str) -> str:
    if column not in row:
        raise Absent(f"no column {column} in {table}")
    return row[column]


def _pick(rows: list[dict[str, str]], column: str, value: str, table: str):
    row = next((r for r in rows if r.get(column) == value), None)
    if row is None:
        raise Absent(f"no {value!r} row in {table}")
    return row


def _summary(row: dict[str, str], table: str) -> Summary:
    return Summary(
        float_cell(_field(row, "mean", table)),
        float_cell(_field(row, "std", table)),
        int(_field(row, "seeds", table)),
    )


# --------------------------------------------------------------------------- #
# Notebook 01: compilation (Section 3, Appendix C).  Deterministic checks.
# --------------------------------------------------------------------------- #

COMPILED_ALGORITHMS = ("bfs", "bellman_ford")  # the two the paper compiles
EXACTNESS = compilation.EXACTNESS_FILE


def _compiled_rows(results: Path) -> list[dict[str, str]]:
    rows = _rows(results / EXACTNESS)
    return [r for r in rows if r["algorithm"] in COMPILED_ALGORITHMS]


def compiled_exact(results: Path) -> Verdict:
    """Every compiled BFS and Bellman-Ford row of the exactness table is exact."""
    rows = _compiled_rows(results)
    if not rows:
        raise Absent(f"no bfs or bellman_ford row in {EXACTNESS}")
    exact = sum(r["exact"] == "True" for r in rows)
    sizes = sorted({int(r["num_nodes"]) for r in rows})
    graphs = sum(int(r["graphs"]) for r in rows)
    hidden = sorted({f"{r['algorithm']} {r['hidden_size']}" for r in rows})
    return Verdict(
        f"{exact} of {len(rows)} checks exact (N = {sizes[0]}-{sizes[-1]}, "
        f"{graphs} graphs)",
        "every hint and output equals dm-clrs's on every sampled graph",
        verdicts.checked(
            exact == len(rows),
            f"deterministic: n = {len(rows)} rows of {EXACTNESS}, {graphs} graphs, "
            f"N in {sizes}, networks {', '.join(hidden)}; {len(rows) - exact} "
            "inexact",
        ),
        DETERMINISTIC,
    )


def _smallest(results: Path) -> dict[str, dict[str, str]]:
    """Each compiled algorithm's smallest exact network in the exactness table."""
    smallest: dict[str, dict[str, str]] = {}
    for row in _compiled_rows(results):
        if row["exact"] != "True":
            continue
        best = smallest.get(row["algorithm"])
        if best is None or int(row["hidden_size"]) < int(best["hidden_size"]):
            smallest[row["algorithm"]] = row
    return smallest


def smallest_hidden(results: Path, algorithm: str, at_most: int) -> Verdict:
    """``algorithm``'s smallest exact compiled network: hidden <= ``at_most``."""
    smallest = _smallest(results)
    if algorithm not in smallest:
        raise Absent(f"no {algorithm} row in {EXACTNESS}")
    hidden = int(smallest[algorithm]["hidden_size"])
    variant = smallest[algorithm].get("variant", "size_free")
    sizes = sorted(
        {
            int(r["hidden_size"])
            for r in _compiled_rows(results)
            if r["algorithm"] == algorithm
        }
    )
    return Verdict(
        f"smallest exact hidden size {hidden} ({variant} variant)",
        f"our smallest exact compiled {algorithm} has hidden size <= {at_most}",
        verdicts.checked(
            hidden <= at_most,
            f"deterministic: hidden sizes compiled for {algorithm} {sizes} "
            f"(n = {len(sizes)} sizes in {EXACTNESS}, exact rows only)",
        ),
        DETERMINISTIC,
    )


# The graph size the paper's minimal networks are read at: its training and
# validation size, which fixes the N x N bias's share of the count.
PAPER_BIAS_NODES = 16


def _paper_variant_row(results: Path, algorithm: str) -> dict[str, str]:
    """``algorithm``'s paper-variant row at :data:`PAPER_BIAS_NODES`.

    Or at the smallest size the table has, when it has no row at 16.
    """
    rows = [
        r
        for r in _compiled_rows(results)
        if r["algorithm"] == algorithm and r.get("variant") == "paper"
    ]
    if not rows:
        raise Absent(f"no {algorithm} row of the paper's variant in {EXACTNESS}")
    sizes = sorted({int(r["num_nodes"]) for r in rows})
    size = PAPER_BIAS_NODES if PAPER_BIAS_NODES in sizes else sizes[0]
    at_size = [r for r in rows if int(r["num_nodes"]) == size]
    return min(at_size, key=lambda r: int(r["hidden_size"]))


def figure6_count(row: dict[str, str]) -> int:
    """The count the paper's "500 parameters" most likely is: processor + bias.

    App. C.1 says it of "these parameters", the ones Figure 6 shows: the
    processor's ``W_1, W_2, W_e, W_m``, skip, head and the N x N bias, not
    the encoders and decoders of Figure 7.
    """
    return int(row["parameters_processor"]) + int(row["parameters_bias"])


def smallest_parameters(results: Path, at_most: int) -> Verdict:
    """Both paper-variant networks have <= ``at_most`` processor and bias parameters."""
    picked = {a: _paper_variant_row(results, a) for a in COMPILED_ALGORITHMS}
    counts = {a: figure6_count(r) for a, r in picked.items()}
    listed = ", ".join(
        f"{a} {counts[a]} (hidden {r['hidden_size']}, N_B = {r['num_nodes']}; "
        f"whole network {r['parameters']}, non-zero {r['nonzero_parameters']})"
        for a, r in picked.items()
    )
    whole = {a: int(r["parameters"]) for a, r in picked.items()}
    return Verdict(
        f"processor + bias: {listed}",
        f"both paper-variant networks have <= {at_most} processor and bias "
        "parameters: the count the sentence names (App. C.1: “these "
        "parameters”, Figure 6's, are those of “a tiny 500-parameter "
        "network with a size 4 hidden state”; Figure 7's encoders and "
        "decoders are not among them)",
        verdicts.checked(
            max(counts.values()) <= at_most,
            f"deterministic: processor + bias parameters of the n = "
            f"{len(counts)} paper-variant networks in {EXACTNESS}; counted "
            "with encoders and decoders, the whole networks have "
            + ", ".join(
                f"{a} {n} ({'within' if n <= at_most else 'over'} {at_most})"
                for a, n in whole.items()
            ),
        ),
        DETERMINISTIC,
    )


# --------------------------------------------------------------------------- #
# Notebook 02: baselines (Table 10).
# --------------------------------------------------------------------------- #

BASELINES = baselines.BASELINES_FILE


def _baseline(results: Path, algorithm: str) -> tuple[dict[str, str], Summary]:
    row = _pick(_rows(results / BASELINES), "algorithm", algorithm, BASELINES)
    return row, _summary(row, BASELINES)


def _baseline_ours(row: dict[str, str]) -> str:
    return (
        f"{row['performance']} over {row['seeds']} seeds at N = {row['test_num_nodes']}"
    )


def _final_step(results: Path, algorithm: str) -> Summary | None:
    """The baseline seeds' test scores at their final-step parameters, if written."""
    path = results / baselines.seeds_file(algorithm)
    if not path.exists():
        return None
    table = baselines.seeds_file(algorithm)
    return Summary.of(
        [float_cell(_field(r, "final_test_score", table)) for r in _rows(path)]
    )


def _both_protocols(
    results: Path,
    algorithm: str,
    summary: Summary,
    rule: Callable[[Summary], Judgement],
) -> tuple[Judgement, str, str]:
    """``rule`` under the paper's selection and the final-step control.

    ``summary``: Table 10's row of ``algorithm`` (the paper's selection).
    Returns the judgement (inconclusive where the two disagree), the
    protocol and a note on the control for ``ours``.
    """
    judged = rule(summary)
    final = _final_step(results, algorithm)
    if final is None:
        return (
            judged,
            f"{PAPER_PROTOCOL} (no final-step control: notebook 02 writes "
            f"{baselines.seeds_file(algorithm)})",
            "",
        )
    control = rule(final)
    judged = _protocols_agree(judged, {"final": control})
    if judged.verdict in (AGREE, DISAGREE):
        judged = dataclasses.replace(
            judged, evidence=f"{judged.evidence}; final-step: {control.evidence}"
        )
    return (
        judged,
        f"{PAPER_PROTOCOL}; control: {FINAL_CONTROL}",
        f"; final-step parameters {final.mean:.3f} ± {final.std:.3f}",
    )


def baseline_at_least(results: Path, algorithm: str, threshold: float) -> Verdict:
    """Table 10's ``algorithm`` scores at least ``threshold``, under both protocols."""
    row, summary = _baseline(results, algorithm)
    judged, protocol, control = _both_protocols(
        results, algorithm, summary, lambda s: verdicts.at_least(s, threshold)
    )
    return Verdict(
        _baseline_ours(row) + control,
        f"95% t-interval of the mean test score over seeds >= {threshold:.2f}, "
        "with the selected and with the final-step parameters",
        judged,
        protocol,
    )


def _plateau(results: Path, algorithm: str) -> tuple[bool, str, int]:
    """Whether the baseline's training reached its plateau (validation curve).

    And the last step validated.
    """
    name = baselines.validation_file(algorithm)
    steps, means = verdicts.seed_means(
        (int(_field(row, "step", name)), float_cell(_field(row, "val_score", name)))
        for row in _rows(results / name)
    )
    return (*verdicts.plateau(steps, means), max(steps, default=0))


def _before_plateau(
    plateau: str, last: int, judged: Judgement, then: str
) -> tuple[Judgement, str]:
    """A verdict that a run still learning cannot give, and what would give it.

    Not testable, ``judged`` for the record; decided by training to a
    plateau (:func:`_plateau`'s ``plateau`` and ``last``), then ``then``.
    """
    return (
        Judgement(
            NOT_TESTABLE,
            f"not trained to its plateau: {plateau}; for the record, {judged.evidence}",
        ),
        f"training to a plateau (none by step {last} here; the paper trains "
        f"{profiles.PAPER.steps}), then {then}",
    )


def baseline_near(results: Path, algorithm: str, target: float) -> Verdict:
    """Table 10's ``algorithm`` scores ``target`` within the band, at a plateau."""
    row, summary = _baseline(results, algorithm)
    criterion = (
        f"95% t-interval of the mean test score within {target:.2f} ± "
        f"{verdicts.NEAR_BAND:.2f}, once training has plateaued, with the "
        "selected and with the final-step parameters"
    )
    reached, plateau, last = _plateau(results, algorithm)
    judged, protocol, control = _both_protocols(
        results, algorithm, summary, lambda s: verdicts.near(s, target)
    )
    protocol += "; at a plateau (slope rule)"
    if not reached:
        seeds = judged.seeds_needed or summary.n
        untested, needs = _before_plateau(
            plateau, last, judged, f"about {seeds} seeds at it (profile paper)"
        )
        return Verdict(
            _baseline_ours(row) + control, criterion, untested, protocol, needs
        )
    judged = dataclasses.replace(judged, evidence=f"{judged.evidence}; {plateau}")
    return Verdict(_baseline_ours(row) + control, criterion, judged, protocol)


def dfs_struggles(results: Path) -> Verdict:
    """DFS's baseline below 0.5 and below BFS's and Bellman-Ford's."""
    rows = {a: _baseline(results, a) for a in ("dfs", "bfs", "bellman_ford")}
    judged = verdicts.struggles(
        rows["dfs"][1], {a: rows[a][1] for a in ("bfs", "bellman_ford")}
    )
    return Verdict(
        ", ".join(f"{a} {rows[a][1].mean:.3f}" for a in rows),
        "DFS's 95% t-interval below 0.5 and below BFS's and Bellman-Ford's",
        Judgement(judged.verdict, judged.evidence.replace("struggling one", "dfs")),
    )


# --------------------------------------------------------------------------- #
# Notebook 03: faithfulness (Section 4).
# --------------------------------------------------------------------------- #

FIRST_BEST = "first_best"
"""Table 1's model selection that the paper used (CLRS's: the first best
validation step); other ``selection`` values are our controls."""


def _correlation_text(row: dict[str, str]) -> str:
    r, p = float_cell(row["pearson_r"]), float_cell(row.get("pearson_p", "nan"))
    low = float_cell(row.get("pearson_ci_low", "nan"))
    high = float_cell(row.get("pearson_ci_high", "nan"))
    text = f"r = {r:+.3f}"
    if math.isfinite(low):
        text += f" [{low:+.2f}, {high:+.2f}]"
    text += f", n = {row['n']}"
    if math.isfinite(p):
        text += f", p = {p:.3g}"
    return text


def _judge_correlation(row: dict[str, str]) -> Judgement:
    return verdicts.no_correlation(
        float_cell(row["pearson_r"]),
        float_cell(row.get("pearson_ci_low", "nan")),
        float_cell(row.get("pearson_ci_high", "nan")),
        int(row["n"]),
    )


def _survives(main: dict[str, str], control: dict[str, str]) -> str:
    """Whether a control keeps the correlation of the paper's protocol."""
    judged = _judge_correlation(control)
    same_sign = np.sign(float_cell(main["pearson_r"])) == np.sign(
        float_cell(control["pearson_r"])
    )
    if judged.verdict == DISAGREE and same_sign:
        return "survives"
    if judged.verdict == AGREE:
        return "vanishes"
    return "unclear"


def _protocols_agree(paper: Judgement, controls: dict[str, Judgement]) -> Judgement:
    """The paper protocol's verdict, unless the final-step control says otherwise.

    A verdict that flips when each seed keeps its last step's parameters
    instead of its first best is decided by the selection, not by the
    models: ``inconclusive``, both verdicts in the evidence.
    """
    final = controls.get("final")
    if final is None or paper.verdict not in (AGREE, DISAGREE):
        return paper
    if final.verdict == paper.verdict:
        return paper
    return Judgement(
        INCONCLUSIVE,
        f"the protocols disagree: {FIRST_BEST} says {paper.verdict}, "
        f"{FINAL_CONTROL} say {final.verdict}; {paper.evidence}",
        final.seeds_needed or paper.seeds_needed,
    )


def no_correlation(results: Path, algorithm: str, measure: str) -> Verdict:
    """Table 1: ``measure`` does not correlate with accuracy (equivalence)."""
    table = faithfulness_study.correlations_file(algorithm)
    rows = [r for r in _rows(results / table) if r["measure"] == measure]
    if not rows:
        raise Absent(f"no {measure} row in {table}")
    if "selection" in rows[0]:
        main = _pick(rows, "selection", FIRST_BEST, table)
        controls = [r for r in rows if r["selection"] != FIRST_BEST]
    else:  # older tables: one row per measure, the paper's protocol
        main, controls = rows[0], []
    judged = _protocols_agree(
        _judge_correlation(main),
        {c["selection"]: _judge_correlation(c) for c in controls},
    )
    ours = _correlation_text(main)
    evidence = judged.evidence
    if controls:
        parts = [
            f"{c['selection']} {_correlation_text(c)} ({_survives(main, c)})"
            for c in controls
        ]
        ours += "; controls: " + "; ".join(
            f"{c['selection']} r = {float_cell(c['pearson_r']):+.3f} "
            f"({_survives(main, c)})"
            for c in controls
        )
        evidence += "; controls: " + "; ".join(parts)
    return Verdict(
        ours,
        f"no correlation: the {FIRST_BEST} bootstrap 95% CI of Pearson r inside "
        f"±{verdicts.EQUIVALENCE_BOUND:.1f} (equivalence, not p >= 0.05), and "
        "the same verdict with final-step parameters",
        dataclasses.replace(judged, evidence=evidence),
        f"{PAPER_PROTOCOL}; control: {FINAL_CONTROL}"
        if any(c["selection"] == "final" for c in controls)
        else PAPER_PROTOCOL,
    )


def _per_seed(results: Path, algorithm: str, column: str) -> dict[int, float]:
    table = faithfulness_study.seeds_file(algorithm)
    return {
        int(r["seed"]): float_cell(_field(r, column, table))
        for r in _rows(results / table)
    }


def _optional_per_seed(results: Path, algorithm: str, column: str) -> list[float]:
    """A per-seed column's values, or none when the table lacks it."""
    try:
        return list(_per_seed(results, algorithm, column).values())
    except Absent:
        return []


def _trivial_reference(results: Path, algorithm: str) -> tuple[str, float]:
    """The best (smallest internal) reference point not derived from compiled."""
    table = faithfulness_study.reference_points_file(algorithm)
    trivial = [
        r for r in _rows(results / table) if "compiled" not in r["point"].lower()
    ]
    if not trivial:
        raise Absent(f"no trivial reference point in {table}")
    best = min(trivial, key=lambda r: float_cell(r["internal"]))
    return best["point"], float_cell(best["internal"])


def none_close(results: Path, algorithm: str) -> Verdict:
    """No seed closer to the compiled attention than the best trivial reference."""
    internal = _per_seed(results, algorithm, "internal")
    name, reference = _trivial_reference(results, algorithm)
    values = list(internal.values())
    judged = verdicts.none_closer(values, reference, name)
    protocol = PAPER_PROTOCOL
    final = _optional_per_seed(results, algorithm, "final_internal")
    if final:
        protocol += f"; control: {FINAL_CONTROL}"
        judged = _protocols_agree(
            judged, {"final": verdicts.none_closer(final, reference, name)}
        )
    return Verdict(
        f"closest seed at internal {min(values):.3f} (of {len(values)}); "
        f"best trivial reference {name} {reference:.3f}",
        "no seed's internal distance below the best trivial reference point, "
        "with first-best and with final-step parameters",
        judged,
        protocol,
    )


def edge_info_closer(results: Path, algorithm: str) -> Verdict:
    """Like for like: the edge-information arm against the default one.

    The compiled Bellman-Ford uses edge information; the paper measures the
    default (no edge information) network against it.  Notebook 02 trains
    both arms at the same sizes and seeds, notebook 03 measures both against
    the same compiled network, so "edge information closes the gap" is a
    difference of per-seed internal distances, tested across seeds.
    """
    default = _per_seed(results, algorithm, "internal")
    modified = _per_seed(results, f"{algorithm}_edge_info", "internal")
    closeness = verdicts.higher(
        [-v for v in modified.values()], [-v for v in default.values()]
    )
    final_default = _optional_per_seed(results, algorithm, "final_internal")
    final_modified = _optional_per_seed(
        results, f"{algorithm}_edge_info", "final_internal"
    )
    protocol = PAPER_PROTOCOL
    if final_default and final_modified:
        protocol += f"; control: {FINAL_CONTROL}"
        final = verdicts.higher(
            [-v for v in final_modified], [-v for v in final_default]
        )
        closeness = _protocols_agree(closeness, {"final": final})
    return Verdict(
        f"mean internal {np.mean(list(modified.values())):.3f} with edge "
        f"information, {np.mean(list(default.values())):.3f} without "
        "(both against the compiled network)",
        "the edge-information arm's internal distance to the compiled "
        "Bellman-Ford lower than the default arm's (one-sided Welch, p < 0.05)",
        closeness,
        protocol,
    )


def _npz(results: Path, algorithm: str) -> Any:
    return np.load(results / faithfulness_study.arrays_file(algorithm))


LONG = "long_"
"""The prefix of notebook 03's measures on long-trace graphs (paths and grids
whose BFS traces have tens of steps): on its test graphs BFS has two or three
counted steps, so "before the output" and "later steps" are one or two."""


def _long_graphs(results: Path, algorithm: str) -> str:
    """Which long-trace graphs a row read, from the summary (or why none)."""
    table = faithfulness_study.summary_file(algorithm)
    label = _row(results / table).get("long_graphs", "")
    if not label:
        raise Absent(f"no long-trace measures (long_graphs) in {table}")
    return label


def _protocol(prefix: str, results: Path, algorithm: str) -> str:
    if not prefix:
        return f"{PAPER_PROTOCOL}; the test graphs"
    return f"{PAPER_PROTOCOL}; long traces: {_long_graphs(results, algorithm)}"


def early_steps_closer(results: Path, algorithm: str, prefix: str = "") -> Verdict:
    """Figure 2: attention closer to compiled in steps 0-1 than later."""
    series = _npz(results, algorithm)
    key = f"{prefix}series_internal_along_time"
    if key not in series.files:
        raise Absent(f"no {key} in {faithfulness_study.arrays_file(algorithm)}")
    along = np.asarray(series[key], np.float64)
    judged = verdicts.early_closer(along)
    return Verdict(
        f"{along.shape[-1]} steps over {along.shape[0]} seeds",
        "per-seed internal distance lower over steps 0-1 than later "
        "(one-sided paired Wilcoxon, p < 0.05)",
        judged,
        _protocol(prefix, results, algorithm),
    )


def traces_degrade(results: Path, algorithm: str, prefix: str = "") -> Verdict:
    """Figure 4: every non-saturated hint's trace match falls along the trace."""
    series = _npz(results, algorithm)
    head = f"{prefix}series_external_"
    names = [k for k in series.files if k.startswith(head) and k.endswith("_uniform")]
    if not names:
        raise Absent(
            f"no {head}*_uniform series in {faithfulness_study.arrays_file(algorithm)}"
        )
    hints = {k.removeprefix(head).removesuffix("_uniform"): series[k] for k in names}
    judged = verdicts.degrade(hints)
    return Verdict(
        f"{len(hints)} hints, {next(iter(hints.values())).shape[0]} seeds",
        "every non-saturated hint's match lower in the last bin than the "
        "first (one-sided paired Wilcoxon, p < 0.05); disagree where one is "
        "higher, or where every one's fall is shown below "
        f"{verdicts.DEGRADE_BOUND:g}",
        judged,
        _protocol(prefix, results, algorithm),
    )


def no_correlation_long(results: Path, algorithm: str, measure: str) -> Verdict:
    """Table 1's equivalence rule on the long-trace graphs.

    Each seed's measure against its output accuracy on the same graphs
    (``long_accuracy``), with the bootstrap interval Table 1 uses.
    """
    accuracy = _per_seed(results, algorithm, f"{LONG}accuracy")
    values = _per_seed(results, algorithm, f"{LONG}{measure}")
    seeds = sorted(accuracy)
    (row,) = correlation_table(
        np.array([accuracy[k] for k in seeds]),
        {measure: np.array([values[k] for k in seeds])},
    )
    row = {k: "" if v is None else str(v) for k, v in row.items()}
    return Verdict(
        _correlation_text(row),
        f"no correlation on long traces: the bootstrap 95% CI of Pearson r "
        f"(each seed's {LONG}{measure} against its {LONG}accuracy) inside "
        f"±{verdicts.EQUIVALENCE_BOUND:.1f}",
        _judge_correlation(row),
        _protocol(LONG, results, algorithm),
    )


def clusters(results: Path, algorithm: str) -> Verdict:
    """Figure 5: the seeds' solutions form clusters (silhouette interval)."""
    series = _npz(results, algorithm)
    if "distances" not in series.files:
        raise Absent(f"no distances in {faithfulness_study.arrays_file(algorithm)}")
    labels = _per_seed(results, algorithm, "cluster")
    seeds = [int(s) for s in series["seeds"]] if "seeds" in series.files else []
    order = seeds if set(seeds) == set(labels) else sorted(labels)
    judged = verdicts.clusters(series["distances"], [labels[s] for s in order])
    count = len(set(labels.values()))
    return Verdict(
        f"{count} clusters of {len(labels)} seeds (the paper: 18 of 128; "
        "the count is not judged)",
        f"resampled 95% interval of the silhouette of the widest-gap clusters "
        f">= {verdicts.SILHOUETTE_STRUCTURE} (disagree below "
        f"{verdicts.SILHOUETTE_NONE})",
        judged,
        needs="more seeds narrow the silhouette's interval, but the rule has "
        f"no power model: the paper's {profiles.PAPER.seeds} seeds (profile "
        "paper) is the next measurement",
    )


def inter_solution(results: Path, algorithm: str) -> Verdict:
    """§4.5: the seeds are closer to each other than any is to compiled."""
    table = faithfulness_study.summary_file(algorithm)
    summary = _row(results / table)
    inter = float_cell(_field(summary, "mean_inter_solution", table))
    closest = float_cell(_field(summary, "closest_internal", table))
    series = _npz(results, algorithm)
    if "distances" not in series.files:
        raise Absent(f"no distances in {faithfulness_study.arrays_file(algorithm)}")
    return Verdict(
        f"mean inter-solution {inter:.3f}, closest to compiled {closest:.3f}",
        "per-seed mean distance to the other seeds below the closest "
        "distance to compiled (one-sided Wilcoxon, p < 0.05)",
        verdicts.closer_to_each_other(series["distances"], closest),
    )


CONVERGED_MATCH = 0.99
"""A trained model "has converged to predict traces" on its training graphs
when its trace match there (Eq. 25) is at least this: our bar, the paper's
"not converged" states none; the same bar as "nearly perfect" output."""


def training_traces(results: Path, algorithm: str) -> Verdict:
    """§4.6: trace predictions on the seeds' own training graphs, at the end.

    Each seed's final-step parameters on graphs drawn from its training
    distribution (``final_train_external``, notebook 03).  "Not converged"
    agrees if the 95 % t-interval of the mean lies below
    :data:`CONVERGED_MATCH`, once notebook 02's training of ``algorithm``
    has plateaued (a run still learning has not converged by its length
    alone); disagrees if it lies at or above it, at any step.
    """
    match = list(_per_seed(results, algorithm, "final_train_external").values())
    summary = Summary.of(match)
    converged = verdicts.at_least(summary, CONVERGED_MATCH)
    flipped = {AGREE: DISAGREE, DISAGREE: AGREE}.get(
        converged.verdict, converged.verdict
    )
    judged = dataclasses.replace(converged, verdict=flipped)
    needs = ""
    if flipped == AGREE:
        reached, plateau, last = _plateau(results, algorithm)
        if not reached:
            judged, needs = _before_plateau(plateau, last, judged, "the same test")
    return Verdict(
        f"trace match (Eq. 25) on training graphs at the last step "
        f"{summary.mean:.3f} ± {summary.std:.3f} (max {max(match):.3f})",
        f"the 95% t-interval of the mean final-step trace match on the seeds' "
        f"training graphs below {CONVERGED_MATCH} once training has plateaued "
        f"(converged at or above, at any step)",
        judged,
        f"each seed's {FINAL_CONTROL} on graphs of its training distribution",
        needs=needs,
    )


# --------------------------------------------------------------------------- #
# Notebook 04: architecture ablations (Tables 11-13, 15, 17).
# --------------------------------------------------------------------------- #


def _variants(results: Path, table: str, claimed: str, other: str):
    rows = _rows(results / table)
    a = _pick(rows, "variant", claimed, table)
    b = _pick(rows, "variant", other, table)
    ours = f"{a['performance']} {claimed}, {b['performance']} {other}"
    return ours, _summary(a, table), _summary(b, table)


def _between(
    results: Path,
    table: str,
    first: str,
    second: str,
    criterion: str,
    rule: Callable[[Summary, Summary], verdicts.Judgement],
) -> Verdict:
    """A claim about two variants of one ablation table, judged by ``rule``.

    Under the paper's selection, and with the final-step parameters where
    the table's per-seed file holds them.
    """
    ours, a, b = _variants(results, table, first, second)
    judged = rule(a, b)
    finals = _arm_finals(results, table.removesuffix(".csv"), (first, second))
    if finals is None:
        return Verdict(ours, criterion, judged)
    return Verdict(
        ours,
        criterion,
        _protocols_agree(judged, {"final": rule(*finals)}),
        f"{PAPER_PROTOCOL}; control: {FINAL_CONTROL}",
    )


def _arm_finals(
    results: Path, name: str, arms: tuple[str, str]
) -> tuple[Summary, Summary] | None:
    """Each arm's final-step test scores, from the table's per-seed file."""
    path = results / ablations.seeds_file(name)
    if not path.exists():
        return None
    rows = _rows(path)
    summaries = []
    for arm in arms:
        scores = [
            float_cell(r.get("final_test_score", ""))
            for r in rows
            if r.get("variant") == arm
        ]
        if not scores or not all(map(math.isfinite, scores)):
            return None
        summaries.append(Summary.of(scores))
    return summaries[0], summaries[1]


def higher(results: Path, table: str, claimed: str, other: str) -> Verdict:
    """``claimed``'s arm of ablation ``table`` above ``other``'s (Welch)."""
    return _between(
        results,
        table,
        claimed,
        other,
        f"{claimed} above {other}: one-sided Welch t-test across seeds, p < 0.05",
        verdicts.higher_from_stats,
    )


def not_worse(results: Path, table: str, modified: str, unmodified: str) -> Verdict:
    """``modified``'s arm of ablation ``table`` not worse than ``unmodified``'s.

    Judged only where ``unmodified`` learned (:func:`_above_chance`): any
    model is as capable as one at chance, so two arms at chance would agree
    by construction.  The studies run met that case (Table 13's arms with
    the fork's simplified decoder, both at 1/N after 70 steps).
    """
    judged = _between(
        results,
        table,
        modified,
        unmodified,
        f"95% Welch interval of {modified} minus {unmodified} above "
        f"-{verdicts.DIFFERENCE_BOUND:.2f} (non-inferiority), judged only where "
        f"{unmodified} is above chance",
        verdicts.not_worse,
    )
    learned, evidence = _above_chance(results, table, unmodified)
    if learned:
        return judged
    return dataclasses.replace(
        judged,
        judgement=Judgement(
            NOT_TESTABLE,
            f"{evidence}: as capable by construction; for the record, "
            f"{judged.judgement.evidence}",
        ),
        needs=f"training until {unmodified} learns (its interval above chance), "
        "then the non-inferiority test",
    )


def uniform_guess_score(algorithm: str, num_nodes: int) -> float | None:
    """The CLRS test score of guessing every output uniformly: ``1 / N``.

    For algorithms whose outputs are all pointers over the ``N`` nodes (the
    ablation tables' BFS, Bellman-Ford, DFS and their variants: ``pi``
    alone); None for any other, which has no such floor here.
    """
    outputs = [v for v in get_spec(algorithm).values() if v[0] == "output"]
    if not outputs or any(v[2] != "pointer" for v in outputs):
        return None
    return 1.0 / num_nodes


def _above_chance(results: Path, table: str, arm: str) -> tuple[bool, str]:
    """Whether ``arm``'s mean is at least a uniform guess's (:func:`verdicts.at_least`).

    ``(True, "")`` where the table's algorithm has no chance floor
    (:func:`uniform_guess_score`) or the arm has fewer than two seeds (the
    rule itself then says not testable).
    """
    row = _pick(_rows(results / table), "variant", arm, table)
    num_nodes = int(_field(row, "test_num_nodes", table))
    chance = uniform_guess_score(_field(row, "algorithm", table), num_nodes)
    if chance is None:
        return True, ""
    judged = verdicts.at_least(_summary(row, table), chance)
    if judged.verdict == NOT_TESTABLE:
        return True, ""
    return judged.verdict == AGREE, (
        f"{arm} is not above chance (a uniform guess scores 1/{num_nodes} = "
        f"{chance:.3f}, every output a pointer): {judged.evidence}"
    )


BIAS_MOVED_LOGIT = 0.05
"""The seed-mean ``bias_logit_bound`` (the most the trained pre-attention
bias can change any attention logit, :func:`nar_gap.model.gatv2.bias_movement`)
from which a bias arm is a different model from its control.
Below it the bias changes no attention weight by more than a factor
``exp(2 * 0.05)``, about 10 %: the two arms are nearly one network trained
twice from the same seed, and "the bias makes no difference" would hold by
construction.  Our choice; the paper states none."""


def _paired_scores(
    results: Path, name: str, first: str, second: str, column: str = "test_score"
) -> tuple[np.ndarray, list[dict[str, str]], list[dict[str, str]]]:
    """Per seed, ``first``'s score minus ``second``'s, and each arm's rows.

    ``column``: ``test_score`` (the selected parameters) or
    ``final_test_score`` (the final step's).
    """
    table = ablations.seeds_file(name)
    rows = _rows(results / table)
    arms = {}
    for label in (first, second):
        arms[label] = {
            r["seed"]: r for r in rows if _field(r, "variant", table) == label
        }
        if not arms[label]:
            raise Absent(f"no {label!r} rows in {table}")
    seeds = sorted(set(arms[first]) & set(arms[second]), key=int)
    differences = np.array(
        [
            float_cell(arms[first][k].get(column, ""))
            - float_cell(arms[second][k].get(column, ""))
            for k in seeds
        ]
    )
    return (
        differences,
        [arms[first][k] for k in seeds],
        [arms[second][k] for k in seeds],
    )


def _bias_moved(rows: list[dict[str, str]]) -> tuple[bool, str, str]:
    """Whether the bias arm's bias moved enough to make it another model.

    Returns the answer, the evidence, and (when it did not) the steps that
    would take at the measured rate (a linear extrapolation: a reading, not
    a measurement).
    """
    bounds = [float_cell(r.get("bias_logit_bound", "")) for r in rows]
    bounds = [b for b in bounds if math.isfinite(b)]
    if not bounds:
        raise Absent("no bias_logit_bound in the bias arm's per-seed rows")
    mean = float(np.mean(bounds))
    steps = max(int(r.get("selected_step") or 0) for r in rows)
    text = (
        f"the bias moved little: it changes any attention logit by at most "
        f"{mean:.3g} on the seed mean (bias_logit_bound; a different model from "
        f"{BIAS_MOVED_LOGIT:g}), n = {len(bounds)} seeds"
    )
    if mean >= BIAS_MOVED_LOGIT:
        return True, text.replace("moved little", "moved"), ""
    if mean > 0 and steps > 0:
        needed = math.ceil(steps * BIAS_MOVED_LOGIT / mean)
        return (
            False,
            text,
            (
                f"training until the bias matters: about {needed} steps at the rate "
                f"it moved in {steps} (linear extrapolation), then the paired test"
            ),
        )
    return False, text, "training until the bias moves at all, then the paired test"


def paired_bias_arms(
    results: Path, name: str, bias_arm: str, control: str, rule_name: str
) -> Verdict:
    """A bias arm against its control, paired by seed (Tables 12 and 15).

    Judged only where the bias made it another model.
    """
    rule = {
        "no difference": verdicts.paired_no_difference,
        "higher": verdicts.paired_higher,
    }[rule_name]

    differences, biased, _ = _paired_scores(results, name, bias_arm, control)
    moved, movement, needs = _bias_moved(biased)
    judged, protocol = _paired_protocols(
        results, name, (bias_arm, control), rule, rule(differences)
    )
    ours = (
        f"{bias_arm} minus {control}: mean per-seed difference "
        f"{np.mean(differences):+.4f} over {differences.size} seeds"
    )
    criterion = (
        f"paired by seed ({rule_name}: "
        + (
            f"paired t-interval inside ±{verdicts.DIFFERENCE_BOUND:.2f}"
            if rule_name == "no difference"
            else "one-sided paired t-test, p < 0.05"
        )
        + "), judged only where the bias moved enough to make the arms "
        "different models"
    )
    if not moved:
        return Verdict(
            ours,
            criterion,
            Judgement(NOT_TESTABLE, f"{movement}; for the record, {judged.evidence}"),
            protocol,
            needs=needs,
        )
    evidence = f"{judged.evidence}; {movement}"
    return Verdict(
        ours, criterion, dataclasses.replace(judged, evidence=evidence), protocol
    )


def _paired_protocols(
    results: Path,
    name: str,
    arms: tuple[str, str],
    rule: Callable[[np.ndarray], Judgement],
    judged: Judgement,
) -> tuple[Judgement, str]:
    """``judged`` checked against the same rule on final-step paired scores."""
    protocol = f"{PAPER_PROTOCOL}; arms paired by seed"
    final, _, _ = _paired_scores(results, name, *arms, column="final_test_score")
    if final.size == 0 or not np.all(np.isfinite(final)):
        return judged, protocol
    judged = _protocols_agree(judged, {"final": rule(final)})
    return judged, f"{protocol}; control: {FINAL_CONTROL}"


def paired_higher(results: Path, name: str, claimed: str, other: str) -> Verdict:
    """Two arms that differ from the start (no bias gate), paired by seed."""
    differences, _, _ = _paired_scores(results, name, claimed, other)
    judged, protocol = _paired_protocols(
        results,
        name,
        (claimed, other),
        verdicts.paired_higher,
        verdicts.paired_higher(differences),
    )
    return Verdict(
        f"{claimed} minus {other}: mean per-seed difference "
        f"{np.mean(differences):+.4f} over {differences.size} seeds",
        f"{claimed} above {other}: one-sided paired t-test across seeds, p < 0.05",
        judged,
        protocol,
    )


# --------------------------------------------------------------------------- #
# Notebooks 05-06: stability and loss landscapes (D.8, D.11).
# --------------------------------------------------------------------------- #

PAPER_OPTIMIZER = ("adam", LEARNING_RATE)  # Appendix A: adam at CLRS's default rate


def _setting(row: dict[str, str]) -> tuple[str, float]:
    return row["optimizer"], float(row["learning_rate"])


def _per_order(rows: list[dict[str, str]]):
    """Per seed (data order): accuracy at step 0, at the last step, the lowest."""
    last = max(int(r["step"]) for r in rows)
    by_seed: dict[str, dict[int, float]] = {}
    for r in rows:
        by_seed.setdefault(r["seed"], {})[int(r["step"])] = float_cell(r["accuracy"])
    seeds = [s for s in by_seed if 0 in by_seed[s] and last in by_seed[s]]
    start = [by_seed[s][0] for s in seeds]
    final = [by_seed[s][last] for s in seeds]
    lowest = [min(by_seed[s].values()) for s in seeds]
    return start, final, lowest, last


def compiled_unstable(results: Path, algorithm: str) -> Verdict:
    """D.8: training on from the compiled weights loses accuracy."""
    table = stability.stability_file(algorithm)
    rows = [r for r in _rows(results / table) if r["start"].startswith("compiled")]
    for column in ("optimizer", "learning_rate", "seed", "step", "accuracy"):
        _field(rows[0] if rows else {}, column, table)
    groups: dict[tuple[str, float], list[dict[str, str]]] = {}
    for r in rows:
        groups.setdefault(_setting(r), []).append(r)
    if PAPER_OPTIMIZER not in groups:
        raise Absent(f"no compiled start with adam lr 0.001 in {table}")
    start, final, lowest, last = _per_order(groups[PAPER_OPTIMIZER])
    controls = {
        f"{opt} lr {lr:g}": float(np.mean(_per_order(g)[1]))
        for (opt, lr), g in groups.items()
        if (opt, lr) != PAPER_OPTIMIZER
    }
    judged = verdicts.unstable(start, final, lowest, controls)
    orders = judged.seeds_needed
    return Verdict(
        f"adam lr 0.001: accuracy {np.mean(start):.3f} at step 0, "
        f"{np.mean(final):.3f} at step {last}",
        "final accuracy (adam, lr 1e-3) more than 1 % below the start, "
        "across data orders (one-sided t-test, p < 0.05)",
        judged,
        f"trained on from the compiled weights, {len(start)} data orders, "
        f"the last evaluation (step {last})",
        needs=f"{orders} data orders trained on from compiled"
        if orders
        else "no count of data orders: the measured fall is about the 1 % bound",
    )


LAYER_NORM_COLUMNS = ("use_ln", "layer_norm")
LAYER_NORM_BY_CENTRE = {"compiled": False, "learned": True}
"""How the package builds each centre when the table does not say: the
compiler sets ``use_ln=False`` (:mod:`nar_gap.compiler.assembly`); trained
baselines use CLRS's default ``use_ln=True`` (Appendix A)."""


def _layer_norm(row: dict[str, str], centre: str) -> bool | None:
    for column in LAYER_NORM_COLUMNS:
        if row.get(column, "") != "":
            return row[column].lower() in ("true", "1")
    return LAYER_NORM_BY_CENTRE.get(centre)


def _network_class(row: dict[str, str], centre: str) -> str:
    norm = _layer_norm(row, centre)
    with_ln = "" if norm is None else (" with" if norm else " without") + " layer norm"
    return f"{centre} hidden {row['hidden_size']}{with_ln}"


def _plane_values(
    rows: list[dict[str, str]], measures: list[str]
) -> dict[str, dict[str, list[float]]]:
    """Per network (a compiled centre, a seed's number), per measure, its planes."""
    return {
        seed or centre: {m: [float_cell(row[m]) for row in planes] for m in measures}
        for (centre, seed), planes in landscape_study.planes_by_network(rows).items()
    }


def _class_differences(results: Path, algorithm: str) -> list[str]:
    """How the compiled and the same-class centres' classes differ (none: [])."""
    table = landscape_study.landscape_file(algorithm)
    rows = _rows(results / table)
    compiled = _pick(rows, "centre", "compiled", table)
    learned = _pick(rows, "centre", landscape_study.SAME_CLASS, table)
    if compiled["hidden_size"] == learned["hidden_size"] and _layer_norm(
        compiled, "compiled"
    ) == _layer_norm(learned, "learned"):
        return []
    return [
        f"{_network_class(compiled, 'compiled')} vs "
        f"{_network_class(learned, 'learned')}"
    ]


def _sharpness_ours(
    networks: dict[str, dict[str, list[float]]],
    measure: str,
    compiled: list[str],
    seeds: dict[str, dict[str, str]],
) -> str:
    """Each network's median rise over its planes, the seeds' with their scores."""
    return (
        "loss rise at radius 0.1, median over planes: "
        + ", ".join(f"{c} {np.median(networks[c][measure]):.3g}" for c in compiled)
        + "; learned of its class "
        + ", ".join(
            f"seed {s} {np.median(networks[s][measure]):.3g} (test score "
            f"{float_cell(r['test_score']):.3f})"
            for s, r in seeds.items()
        )
    )


def compiled_sharper(results: Path, algorithm: str) -> Verdict:
    """Compiled against every learned minimum of the compiled network's class.

    The learned row of notebook 06 (hidden 128, layer norm) is another
    network class, whose sharpness is not comparable; the row named
    :data:`~nar_gap.paper.experiments.landscape_study.SAME_CLASS` is the compiled
    architecture trained from a random start.  A same-class minimum that
    does not solve the task is a minimum of the loss, not a learned
    solution: the test compares the planes of every exact compiled network
    (the compiler's default and its margin controls) with those of each seed
    that solves it (:func:`~nar_gap.analysis.verdicts.sharper`, on
    ``landscape_planes_<a>.csv``), and with none it is not testable, saying
    what the seeds scored.
    """
    differences = _class_differences(results, algorithm)
    planes_table = landscape_study.planes_file(algorithm)
    planes = _rows(results / planes_table)
    measures = [m for m in verdicts.SHARPNESS_MEASURES if m in planes[0]]
    if not measures:
        raise Absent(f"no sharpness column in {planes_table}")
    networks = _plane_values(planes, measures)
    if "compiled" not in networks:
        raise Absent(f"no 'compiled' row in {planes_table}")
    seeds = {r["seed"]: r for r in planes if r["centre"] == landscape_study.SAME_CLASS}
    solving = [s for s, r in seeds.items() if r["solves_task"].lower() == "true"]
    compiled_rows = {
        r["centre"]: r for r in planes if r["centre"] != landscape_study.SAME_CLASS
    }
    exact = [c for c, r in compiled_rows.items() if r["exact"].lower() == "true"]
    judged = verdicts.sharper(
        {c: networks[c] for c in exact},
        {int(s): networks[s] for s in solving},
        differences,
    )
    left_out = [c for c in compiled_rows if c not in exact]
    if left_out and judged.verdict != NOT_TESTABLE:
        judged = dataclasses.replace(
            judged,
            evidence=f"{judged.evidence}; not exact, left out: {', '.join(left_out)}",
        )
    first = measures[0]
    ours = _sharpness_ours(networks, first, list(compiled_rows), seeds)
    criterion = (
        "every exact compiled network (the compiler's margins and their "
        "controls) sharper than every learned minimum of one network class (the "
        "compiled architecture, trained from a random start, solving the task) "
        "on every measure, over independent filter-normalised planes"
    )
    protocol = (
        "the compiled weights, and with the compiler's margins times "
        f"{', '.join(f'{f:g}' for f in landscape_study.MARGIN_CONTROLS)}, "
        "against every same-class seed that solves the task (test score >= "
        f"{landscape_study.SOLVED_SCORE:g}), "
        f"{len(networks['compiled'][first])} planes each"
    )
    if not solving and not differences:
        steps = next(iter(seeds.values()), {}).get("steps", "?")
        return Verdict(
            ours,
            criterion,
            dataclasses.replace(
                judged,
                evidence=f"no same-class seed solves the task in {steps} steps "
                f"(test score below {landscape_study.SOLVED_SCORE:g}; n = "
                f"{len(seeds)} seeds): a minimum of the loss, not a learned "
                "solution",
            ),
            protocol,
            needs="a network of the compiled class that solves the task: "
            f"longer training than its {steps} steps, or more seeds",
        )
    return Verdict(ours, criterion, judged, protocol)


# --------------------------------------------------------------------------- #
# Notebook 08: TransNAR (Bounsi et al., 2024) with a trained and a compiled NAR.
# --------------------------------------------------------------------------- #


def _transnar_per_seed(
    results: Path, algorithm: str, model: str, in_distribution: bool
) -> list[float]:
    """Per seed, the mean CLRS score over the in- or out-of-distribution sizes."""
    table = transnar.RESULTS_FILE.format(algorithm)
    rows = _rows(results / table)
    for column in ("model", "in_distribution", "seed", "clrs"):
        _field(rows[0], column, table)
    values = per_seed(rows, model, in_distribution)
    if not values:
        where = "in" if in_distribution else "out of"
        raise Absent(f"no {model} rows {where} distribution in {table}")
    return values


TRANSNAR_PROTOCOL = "each TransNAR seed's parameters at its last step"

COMPETENT_CLRS = 0.9
"""The in-distribution CLRS score (seed mean) from which a model is competent
enough for its out-of-distribution score to mean anything: "fails out of
distribution" and "holds up better" compare models that first solve the
task where they were trained (TransNAR's own claims rest on such models).
Our bar; below it the rows are not testable here."""

COMPETENCE_RULE = "one_hop"
"""The rule a competent model must also beat in distribution: on 4 and 5
nodes most parents are the node itself or the source, so answering one hop
without search scores about 0.9 (``transnar_rules_<algorithm>.csv``) and
the bar alone would call that rule competent."""


def _rule_in_distribution(results: Path, algorithm: str) -> float:
    """:data:`COMPETENCE_RULE`'s CLRS score, mean over the training sizes."""
    table = transnar.RULES_FILE.format(algorithm)
    inside = [
        float(_field(row, COMPETENCE_RULE, table))
        for row in _rows(results / table)
        if _field(row, "in_distribution", table) == "True"
    ]
    if not inside:
        raise Absent(f"no in-distribution rows in {table}")
    return float(np.mean(inside))


def _incompetent(results: Path, algorithm: str, models: tuple[str, ...]) -> str:
    """Which of ``models`` are below the bar or the rule in distribution."""
    rule = _rule_in_distribution(results, algorithm)
    low = []
    for model in models:
        inside = float(np.mean(_transnar_per_seed(results, algorithm, model, True)))
        if inside < COMPETENT_CLRS or inside <= rule:
            low.append(f"{model} {inside:.3f}")
    if not low:
        return ""
    return (
        f"in-distribution CLRS score below {COMPETENT_CLRS} or not above the "
        f"{COMPETENCE_RULE} rule's {rule:.3f} on the same graphs: {', '.join(low)}"
    )


def _transnar_judged(judged: Judgement) -> tuple[Judgement, str, str]:
    """A TransNAR row's judgement, protocol and what would decide it."""
    count = judged.seeds_needed
    needs = (
        f"{count} TransNAR seeds per model (notebook 08's profile sets them)"
        if count
        else "no count of seeds: the measured difference is about zero"
    )
    return judged, TRANSNAR_PROTOCOL, needs


def _competent_only(
    results: Path, algorithm: str, models: tuple[str, ...], verdict: Verdict
) -> Verdict:
    """``verdict``, or not testable where a compared model is not competent."""
    low = _incompetent(results, algorithm, models)
    if not low:
        return verdict
    n = len(_transnar_per_seed(results, algorithm, models[0], True))
    return dataclasses.replace(
        verdict,
        judgement=Judgement(
            NOT_TESTABLE,
            f"{low} (n = {n} seeds); for the record, {verdict.judgement.evidence}",
        ),
        needs="models competent in distribution first (a longer or larger "
        "TransNAR training), then the test",
    )


def transformer_fails_ood(results: Path, algorithm: str) -> Verdict:
    """TransNAR: the Transformer alone scores lower out of distribution."""
    inside = _transnar_per_seed(results, algorithm, "transformer", True)
    outside = _transnar_per_seed(results, algorithm, "transformer", False)
    return _competent_only(
        results,
        algorithm,
        ("transformer",),
        Verdict(
            f"transformer CLRS score {np.mean(inside):.3f} in distribution, "
            f"{np.mean(outside):.3f} out of it",
            "in-distribution above out-of-distribution CLRS score: one-sided "
            "Welch t-test across seeds, p < 0.05, for a Transformer "
            f"competent in distribution (CLRS score >= {COMPETENT_CLRS} and above "
            f"the {COMPETENCE_RULE} rule)",
            *_transnar_judged(verdicts.higher(inside, outside)),
        ),
    )


def hybrid_holds_up(results: Path, algorithm: str, model: str) -> Verdict:
    """TransNAR: the hybrid ``model`` above the Transformer out of distribution."""
    hybrid = _transnar_per_seed(results, algorithm, model, False)
    alone = _transnar_per_seed(results, algorithm, "transformer", False)
    return _competent_only(
        results,
        algorithm,
        (model, "transformer"),
        Verdict(
            f"out-of-distribution CLRS score {model} {np.mean(hybrid):.3f}, "
            f"transformer {np.mean(alone):.3f}",
            f"{model} above transformer out of distribution: one-sided Welch "
            "t-test across seeds, p < 0.05, both competent in distribution "
            f"(CLRS score >= {COMPETENT_CLRS} and above the {COMPETENCE_RULE} "
            "rule)",
            *_transnar_judged(verdicts.higher(hybrid, alone)),
        ),
    )
