"""The paper against ours, computed from the results files.

Every finding a notebook discusses is a :class:`Claim`: where the paper makes
it, its words and numbers (typed here once, from the paper's text), and a
check that reads *our* results files and says whether they agree, by a
criterion stated in the row.  A notebook ends with :func:`write_comparison`'s
table and its prose says what that table says; nothing else in a notebook or
the README states a finding.

The paper's extracted text lost most table values; the numbers below are the
ones it kept (Table 1, the 87 % of the abstract, the 18 clusters of §4.5, the
hidden size 4 of §3.3, the 500 parameters of D.7).
Where the paper gives only words ("no significant correlation", "unstable"),
the criterion turns them into a test on our numbers and says which.

Verdicts: ``agree``, ``disagree``, ``not comparable`` (our run cannot test the
claim, e.g. too few seeds for a p-value; the row says why) and ``missing``
(the results file is not there yet: run the notebook first).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from nar_gap.analysis.stats import MIN_SEEDS_FOR_P
from nar_gap.system import files

AGREE, DISAGREE, NOT_COMPARABLE, MISSING = (
    "agree",
    "disagree",
    "not comparable",
    "missing",
)
SIGNIFICANCE = 0.05  # the paper's "significant": a two-sided p below 5 %
CLOSE_TO_COMPILED = 0.05  # ours: an internal distance this small is "similar"


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What our results say about one claim."""

    ours: str
    verdict: str
    criterion: str


@dataclasses.dataclass(frozen=True)
class Claim:
    """One finding of the paper and the check of it against our results."""

    notebook: str
    where: str
    claim: str
    paper: str
    check: Callable[[Path], Verdict]


def _row(path: Path) -> dict[str, str]:
    return files.read_table(path)[0]


def _rows(path: Path) -> list[dict[str, str]]:
    return files.read_table(path)


def _number(text: str) -> float:
    return float(text) if text not in ("", "nan") else math.nan


# --------------------------------------------------------------------------- #
# Notebook 01: compilation (Section 3, Appendix C).
# --------------------------------------------------------------------------- #

COMPILED_ALGORITHMS = ("bfs", "bellman_ford")  # the two the paper compiles


def _no_row(algorithm: str, table: str) -> Verdict:
    """A results file without the algorithm's row: run its notebook first."""
    return Verdict(f"no {algorithm} row in {table}", MISSING, "")


def _compiled_rows(results: Path) -> list[dict[str, str]]:
    rows = _rows(results / "compiled_exactness.csv")
    return [r for r in rows if r["algorithm"] in COMPILED_ALGORITHMS]


def _compiled_exact(results: Path) -> Verdict:
    rows = _compiled_rows(results)
    exact = sum(r["exact"] == "True" for r in rows)
    sizes = sorted({int(r["num_nodes"]) for r in rows})
    return Verdict(
        f"{exact} of {len(rows)} checks exact (N = {sizes[0]}-{sizes[-1]}, "
        f"{sum(int(r['graphs']) for r in rows)} graphs)",
        AGREE if rows and exact == len(rows) else DISAGREE,
        "every hint and output equals dm-clrs's on every sampled graph",
    )


def _smallest(results: Path) -> dict[str, dict[str, str]]:
    """Each compiled algorithm's smallest network in the exactness table."""
    smallest: dict[str, dict[str, str]] = {}
    for row in _compiled_rows(results):
        best = smallest.get(row["algorithm"])
        if best is None or int(row["hidden_size"]) < int(best["hidden_size"]):
            smallest[row["algorithm"]] = row
    return smallest


def _smallest_hidden(algorithm: str, at_most: int):
    def check(results: Path) -> Verdict:
        smallest = _smallest(results)
        if algorithm not in smallest:
            return _no_row(algorithm, "compiled_exactness.csv")
        hidden = int(smallest[algorithm]["hidden_size"])
        return Verdict(
            f"smallest hidden size {hidden}",
            AGREE if hidden <= at_most else DISAGREE,
            f"our smallest compiled {algorithm} has hidden size <= {at_most}",
        )

    return check


def _smallest_parameters(at_most: int):
    def check(results: Path) -> Verdict:
        smallest = _smallest(results)
        absent = [a for a in COMPILED_ALGORITHMS if a not in smallest]
        if absent:
            return _no_row(absent[0], "compiled_exactness.csv")
        counts = {a: int(smallest[a]["parameters"]) for a in COMPILED_ALGORITHMS}
        return Verdict(
            ", ".join(f"{a} {n} parameters" for a, n in counts.items()),
            AGREE if max(counts.values()) <= at_most else DISAGREE,
            f"both smallest compiled networks have <= {at_most} parameters",
        )

    return check


# --------------------------------------------------------------------------- #
# Notebook 02: baselines (Table 10).
# --------------------------------------------------------------------------- #


def _baseline_means(results: Path) -> dict[str, float]:
    rows = _rows(results / "table10_baselines.csv")
    return {r["algorithm"]: _number(r["mean"]) for r in rows}


def _baseline(algorithm: str, at_least: float | None, near: float | None):
    def check(results: Path) -> Verdict:
        row = next(
            (
                r
                for r in _rows(results / "table10_baselines.csv")
                if r["algorithm"] == algorithm
            ),
            None,
        )
        if row is None:
            return _no_row(algorithm, "table10_baselines.csv")
        mean = _number(row["mean"])
        ours = (
            f"{row['performance']} over {row['seeds']} seeds "
            f"at N = {row['test_num_nodes']}"
        )
        if at_least is not None:
            return Verdict(
                ours,
                AGREE if mean >= at_least else DISAGREE,
                f"mean test score >= {at_least:.2f}",
            )
        return Verdict(
            ours,
            AGREE if abs(mean - near) <= 0.05 else DISAGREE,
            f"mean test score within 0.05 of {near:.2f}",
        )

    return check


def _dfs_struggles(results: Path) -> Verdict:
    means = _baseline_means(results)
    absent = [a for a in ("bfs", "bellman_ford", "dfs") if a not in means]
    if absent:
        return _no_row(absent[0], "table10_baselines.csv")
    order = sorted(means, key=means.get)
    return Verdict(
        ", ".join(f"{a} {means[a]:.3f}" for a in order),
        AGREE if order[0] == "dfs" and means["dfs"] < 0.5 else DISAGREE,
        "DFS has the lowest mean test score of the three, below 0.5",
    )


# --------------------------------------------------------------------------- #
# Notebook 03: faithfulness (Section 4).
# --------------------------------------------------------------------------- #


def _no_correlation(algorithm: str, measure: str):
    def check(results: Path) -> Verdict:
        rows = _rows(results / f"table1_correlations_{algorithm}.csv")
        row = next(r for r in rows if r["measure"] == measure)
        r, p = _number(row["pearson_r"]), _number(row["pearson_p"])
        low = _number(row.get("pearson_ci_low", "nan"))  # older tables: none
        high = _number(row.get("pearson_ci_high", "nan"))
        n = int(row["n"])
        criterion = (
            f"no significant Pearson correlation: permutation p >= {SIGNIFICANCE}"
        )
        if math.isnan(r):
            return Verdict(f"undefined (n = {n})", NOT_COMPARABLE, criterion)
        ours = f"r = {r:+.3f}"
        if not math.isnan(low):
            ours += f" [{low:+.2f}, {high:+.2f}]"
        ours += f", n = {n}"
        if math.isnan(p) or n < MIN_SEEDS_FOR_P:  # older tables printed one
            return Verdict(
                ours,
                NOT_COMPARABLE,
                f"{criterion} (no p below {MIN_SEEDS_FOR_P} seeds)",
            )
        ours += f", p = {p:.3f}"
        return Verdict(ours, AGREE if p >= SIGNIFICANCE else DISAGREE, criterion)

    return check


def _none_close(algorithm: str):
    def check(results: Path) -> Verdict:
        summary = _row(results / f"faithfulness_summary_{algorithm}.csv")
        closest = _number(summary["closest_internal"])
        agreement = _number(summary.get("mean_argmax_agreement", "nan"))
        ours = f"closest seed at internal {closest:.3f} (of {summary['num_seeds']})"
        if not math.isnan(agreement):  # tables before the calibrated measures
            ours += f"; mean argmax agreement {agreement:.3f}"
        return Verdict(
            ours,
            AGREE if closest > CLOSE_TO_COMPILED else DISAGREE,
            f"no seed within internal distance {CLOSE_TO_COMPILED} (our threshold)",
        )

    return check


def _mean_of_present(values: np.ndarray, axis: int = 0) -> np.ndarray:
    """The mean over ``axis`` of the entries that are not NaN (NaN where none is).

    A step no sample reaches is NaN in every seed's series; numpy's
    ``nanmean`` would warn there.
    """
    values = np.asarray(values, np.float64)
    present = ~np.isnan(values)
    count = present.sum(axis=axis)
    total = np.where(present, values, 0.0).sum(axis=axis)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _early_steps_closer(algorithm: str):
    def check(results: Path) -> Verdict:
        series = np.load(results / f"faithfulness_{algorithm}.npz")
        along = np.asarray(series["series_internal_along_time"], np.float64)
        mean = _mean_of_present(along)  # over seeds, per step
        criterion = "mean internal distance over steps 0-1 below that of later steps"
        if mean.size <= 2 or np.all(np.isnan(mean[2:])):
            return Verdict(f"{mean.size} steps", NOT_COMPARABLE, criterion)
        early = float(_mean_of_present(mean[:2]))
        late = float(_mean_of_present(mean[2:]))
        return Verdict(
            f"steps 0-1: {early:.3f}, later: {late:.3f}",
            AGREE if early < late else DISAGREE,
            criterion,
        )

    return check


def _traces_degrade(algorithm: str):
    def check(results: Path) -> Verdict:
        series = np.load(results / f"faithfulness_{algorithm}.npz")
        names = [k for k in series.files if k.endswith("_uniform")]
        criterion = (
            "external match on the uniform timescale: first bin above the last, "
            "for every hint"
        )
        if not names:
            return Verdict("no decoded hints", NOT_COMPARABLE, criterion)
        firsts, lasts, parts = [], [], []
        for name in names:
            mean = _mean_of_present(series[name])
            firsts.append(mean[0])
            lasts.append(mean[-1])
            hint = name.removeprefix("series_external_").removesuffix("_uniform")
            parts.append(f"{hint} {mean[0]:.3f} -> {mean[-1]:.3f}")
        degrade = all(f > last for f, last in zip(firsts, lasts, strict=True))
        return Verdict("; ".join(parts), AGREE if degrade else DISAGREE, criterion)

    return check


def _clusters(algorithm: str):
    def check(results: Path) -> Verdict:
        summary = _row(results / f"faithfulness_summary_{algorithm}.csv")
        seeds = int(summary["num_seeds"])
        ours = f"{summary['num_clusters']} (widest gap) of {seeds} seeds"
        return Verdict(
            ours,
            NOT_COMPARABLE,
            "a count of clusters depends on the seeds and the rule; the paper's "
            "rule is not stated (see the sensitivity figure)",
        )

    return check


# --------------------------------------------------------------------------- #
# Notebooks 04-06: appendix D.
# --------------------------------------------------------------------------- #


def _edge_info_helps(results: Path) -> Verdict:
    rows = {r["variant"]: r for r in _rows(results / "table11_edge_info.csv")}
    without, with_ = rows["no edge information"], rows["edge information"]
    means = _number(without["mean"]), _number(with_["mean"])
    return Verdict(
        f"{without['performance']} without, {with_['performance']} with",
        AGREE if means[1] > means[0] else DISAGREE,
        "higher mean test score with edge information",
    )


def _compiled_unstable(algorithm: str):
    def check(results: Path) -> Verdict:
        rows = _rows(results / f"stability_{algorithm}.csv")
        compiled = [r for r in rows if r["start"] == "compiled"]
        start = [_number(r["accuracy"]) for r in compiled if int(r["step"]) == 0]
        later = [_number(r["accuracy"]) for r in compiled if int(r["step"]) > 0]
        lowest = min(later) if later else math.nan
        ours = (
            f"accuracy {np.mean(start):.3f} at step 0, lowest {lowest:.3f} "
            f"after training on"
        )
        return Verdict(
            ours,
            AGREE if later and lowest < 0.99 * np.mean(start) else DISAGREE,
            "accuracy falls by more than 1 % once training continues from compiled",
        )

    return check


def _compiled_sharper(algorithm: str):
    def check(results: Path) -> Verdict:
        rows = {r["centre"]: r for r in _rows(results / f"landscape_{algorithm}.csv")}
        compiled = _number(rows["compiled"]["sharpness_r0.1"])
        learned = _number(rows["learned"]["sharpness_r0.1"])
        return Verdict(
            f"loss rise at radius 0.1: compiled {compiled:.3g}, learned {learned:.3g}",
            AGREE if compiled > learned else DISAGREE,
            "the compiled minimum's loss rises more than the learned one's",
        )

    return check


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "01",
        "§3.3, App. C",
        "BFS and Bellman-Ford compile into GATv2 and execute exactly",
        "exact",
        _compiled_exact,
    ),
    Claim(
        "01",
        "§3.3",
        "compiled Bellman-Ford runs in a minimal model of hidden size 4",
        "hidden 4",
        _smallest_hidden("bellman_ford", 4),
    ),
    Claim(
        "01",
        "App. D.7",
        "a 500-parameter GAT can express BFS or Bellman-Ford",
        "about 500 parameters",
        _smallest_parameters(500),
    ),
    Claim(
        "02",
        "§4, Table 10",
        "trained BFS is nearly perfect",
        "> 99 % (N = 64)",
        _baseline("bfs", at_least=0.99, near=None),
    ),
    Claim(
        "02",
        "abstract",
        "trained Bellman-Ford predicts shortest paths with 87 % accuracy",
        "87 %",
        _baseline("bellman_ford", at_least=None, near=0.87),
    ),
    Claim(
        "02",
        "§2 (Related Work)",
        "trained DFS struggles significantly",
        "struggles significantly",
        _dfs_struggles,
    ),
    Claim(
        "03",
        "Table 1",
        "internal faithfulness does not correlate with accuracy (BFS)",
        "Pearson -0.055 (p 0.569), Spearman -0.018 (p 0.856)",
        _no_correlation("bfs", "internal"),
    ),
    Claim(
        "03",
        "Table 1",
        "external faithfulness does not correlate with accuracy (BFS)",
        "Pearson -0.124 (p 0.203), Spearman -0.130 (p 0.178)",
        _no_correlation("bfs", "external"),
    ),
    Claim(
        "03",
        "§4.5",
        "none of the learned BFS solutions behaves like the compiled one",
        "none of 128 seeds",
        _none_close("bfs"),
    ),
    Claim(
        "03",
        "§4.3, Figure 2",
        "BFS attention is slightly closer in the first two steps, then deviates",
        "closer at steps 0-1",
        _early_steps_closer("bfs"),
    ),
    Claim(
        "03",
        "§4.4, Figure 4",
        "BFS trace predictions degrade over time",
        "degrade along the uniform timescale",
        _traces_degrade("bfs"),
    ),
    Claim(
        "03",
        "§4.5, Figure 5",
        "the learned BFS solutions form consistent clusters",
        "18 clusters of 128 seeds",
        _clusters("bfs"),
    ),
    Claim(
        "04",
        "§4.6, D.4, Table 11",
        "edge information partially closes Bellman-Ford's gap",
        "modified (edge info) above default",
        _edge_info_helps,
    ),
    Claim(
        "05",
        "D.8, Table 16",
        "compiled BFS sits in an unstable minimum: training on loses accuracy",
        "unstable when further trained",
        _compiled_unstable("bfs"),
    ),
    Claim(
        "05",
        "D.8, Table 16",
        "compiled Bellman-Ford sits in an unstable minimum",
        "unstable when further trained",
        _compiled_unstable("bellman_ford"),
    ),
    Claim(
        "06",
        "D.11",
        "compiled BFS is a sharp minimum, the learned one flat",
        "sharp against flat",
        _compiled_sharper("bfs"),
    ),
    Claim(
        "06",
        "D.11",
        "compiled Bellman-Ford is a sharp minimum, the learned one flat",
        "sharp against flat",
        _compiled_sharper("bellman_ford"),
    ),
)


def comparison(notebook: str, results_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """One row per claim of ``notebook``: the paper's, ours, and the verdict."""
    results = Path(results_dir)
    rows = []
    for claim in (c for c in CLAIMS if c.notebook == notebook):
        try:
            verdict = claim.check(results)
        except FileNotFoundError as error:
            verdict = Verdict(f"no {Path(error.filename).name}", MISSING, "")
        rows.append(
            {
                "where": claim.where,
                "claim": claim.claim,
                "paper": claim.paper,
                "ours": verdict.ours,
                "verdict": verdict.verdict,
                "criterion": verdict.criterion,
            }
        )
    return rows


def write_comparison(
    notebook: str,
    results_dir: str | os.PathLike,
    metadata: dict[str, Any] | None = None,
) -> Path:
    """``results/paper_vs_ours_<notebook>.csv`` (with its sidecar)."""
    if not any(c.notebook == notebook for c in CLAIMS):
        known = sorted({c.notebook for c in CLAIMS})
        raise ValueError(f"no claims for notebook {notebook!r}; known: {known}")
    return files.write_table(
        Path(results_dir) / f"paper_vs_ours_{notebook}.csv",
        comparison(notebook, results_dir),
        metadata,
    )


def counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """How many claims got each verdict."""
    found = {v: 0 for v in (AGREE, DISAGREE, NOT_COMPARABLE, MISSING)}
    for row in rows:
        found[row["verdict"]] += 1
    return found


def verdict_sentence(rows: list[dict[str, Any]] | str | os.PathLike) -> str:
    """The sentence under a comparison table, written from its verdicts.

    ``rows``: :func:`comparison`'s rows, or the file :func:`write_comparison`
    wrote.
    """
    if isinstance(rows, (str, os.PathLike)):
        rows = files.read_table(rows)
    found = counts(rows)
    parts = [f"ours agree with {found[AGREE]}", f"disagree with {found[DISAGREE]}"]
    if found[NOT_COMPARABLE]:
        parts.append(f"cannot test {found[NOT_COMPARABLE]}")
    if found[MISSING]:
        parts.append(f"lack the results for {found[MISSING]}")
    agreeing = [r["claim"] for r in rows if r["verdict"] == AGREE]
    differing = [r["claim"] for r in rows if r["verdict"] == DISAGREE]
    noun = "finding" if len(rows) == 1 else "findings"
    text = f"Of the paper's {len(rows)} {noun} here, " + ", ".join(parts) + "."
    if agreeing:
        text += " Reproduced: " + "; ".join(agreeing) + "."
    if differing:
        text += " Not reproduced: " + "; ".join(differing) + "."
    return text
