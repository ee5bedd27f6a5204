"""The paper against ours: verdicts computed from results files, by stated criteria."""

from __future__ import annotations

import numpy as np
import pytest

from nar_gap.experiments import paper
from nar_gap.system import files


def _summary(results, algorithm, mean_accuracy, closest=0.5, seeds=32):
    files.write_table(
        results / f"faithfulness_summary_{algorithm}.csv",
        [
            {
                "algorithm": algorithm,
                "num_seeds": seeds,
                "num_nodes": 64,
                "mean_accuracy": mean_accuracy,
                "closest_internal": closest,
                "mean_argmax_agreement": 0.4,
                "num_clusters": 3,
            }
        ],
    )


def _table1(results, internal_p, external_p, n=32):
    rows = [
        {
            "measure": measure,
            "n": n,
            "pearson_r": -0.1,
            "pearson_p": p,
            "pearson_ci_low": -0.4,
            "pearson_ci_high": 0.2,
        }
        for measure, p in (("internal", internal_p), ("external", external_p))
    ]
    files.write_table(results / "table1_correlations_bfs.csv", rows)


def _series(results, internal, uniform_first, uniform_last):
    np.savez(
        results / "faithfulness_bfs.npz",
        series_internal_along_time=np.array([internal]),
        series_external_pi_h_uniform=np.array([[uniform_first, uniform_last]]),
    )


def _verdicts(notebook, results):
    return {r["claim"]: r["verdict"] for r in paper.comparison(notebook, results)}


def _exactness(results, rows):
    """``rows``: (algorithm, hidden_size, parameters, exact)."""
    files.write_table(
        results / "compiled_exactness.csv",
        [
            {
                "algorithm": algorithm,
                "hidden_size": hidden,
                "parameters": parameters,
                "num_nodes": n,
                "graphs": 4,
                "exact": exact,
            }
            for algorithm, hidden, parameters, exact in rows
            for n in (16, 64)
        ],
    )


def _baselines(results, means):
    files.write_table(
        results / "table10_baselines.csv",
        [
            {
                "algorithm": a,
                "seeds": 8,
                "test_num_nodes": 64,
                "performance": f"{m:.3f} ± 0.010 ({m:.3f})",
                "mean": m,
            }
            for a, m in means.items()
        ],
    )


def test_notebook_01_verdicts_follow_the_numbers(tmp_path):
    _exactness(
        tmp_path,
        [
            ("bfs", 4, 480, True),
            ("bfs", 128, 90_000, True),
            ("bellman_ford", 4, 500, True),
            ("dfs", 30, 30_000, False),  # not one of the paper's two: not counted
        ],
    )
    assert set(_verdicts("01", tmp_path).values()) == {paper.AGREE}
    _exactness(
        tmp_path,
        [("bfs", 7, 1390, True), ("bellman_ford", 5, 501, False)],
    )
    found = _verdicts("01", tmp_path)
    assert set(found.values()) == {paper.DISAGREE}, found


def test_notebook_02_verdicts_follow_the_numbers(tmp_path):
    _baselines(tmp_path, {"bfs": 0.995, "dfs": 0.05, "bellman_ford": 0.85})
    assert set(_verdicts("02", tmp_path).values()) == {paper.AGREE}
    _baselines(
        tmp_path, {"bfs": 0.95, "dfs": 0.6, "bellman_ford": 0.7}
    )  # DFS lowest, not low
    assert set(_verdicts("02", tmp_path).values()) == {paper.DISAGREE}
    _baselines(tmp_path, {"bfs": 0.995})  # a table without two rows: missing
    rows = paper.comparison("02", tmp_path)
    assert [r["verdict"] for r in rows] == [paper.AGREE, paper.MISSING, paper.MISSING]
    assert rows[1]["ours"] == "no bellman_ford row in table10_baselines.csv"
    _exactness(tmp_path, [("bfs", 7, 1390, True)])
    assert paper.MISSING in _verdicts("01", tmp_path).values()


def test_notebook_03_verdicts_follow_the_numbers(tmp_path):
    _summary(tmp_path, "bfs", 0.995, closest=0.7)
    _summary(tmp_path, "bellman_ford", 0.60)
    _table1(tmp_path, internal_p=0.40, external_p=0.01)
    _series(tmp_path, [0.2, 0.3, 0.8, 0.9], uniform_first=0.9, uniform_last=0.5)
    got = _verdicts("03", tmp_path)
    assert got["internal faithfulness does not correlate with accuracy (BFS)"] == (
        paper.AGREE
    )
    assert got["external faithfulness does not correlate with accuracy (BFS)"] == (
        paper.DISAGREE
    )
    assert got["none of the learned BFS solutions behaves like the compiled one"] == (
        paper.AGREE
    )
    assert got[
        "BFS attention is slightly closer in the first two steps, then deviates"
    ] == (paper.AGREE)
    assert got["BFS trace predictions degrade over time"] == paper.AGREE
    assert got["the learned BFS solutions form consistent clusters"] == (
        paper.NOT_COMPARABLE
    )


def test_the_opposite_numbers_give_the_opposite_verdicts(tmp_path):
    _summary(tmp_path, "bfs", 0.90, closest=0.01)
    _summary(tmp_path, "bellman_ford", 0.85)
    _table1(tmp_path, internal_p=0.001, external_p=0.5)
    _series(tmp_path, [0.9, 0.9, 0.2, 0.1], uniform_first=0.5, uniform_last=0.9)
    got = _verdicts("03", tmp_path)
    assert got["internal faithfulness does not correlate with accuracy (BFS)"] == (
        paper.DISAGREE
    )
    assert got["none of the learned BFS solutions behaves like the compiled one"] == (
        paper.DISAGREE
    )
    assert got[
        "BFS attention is slightly closer in the first two steps, then deviates"
    ] == (paper.DISAGREE)
    assert got["BFS trace predictions degrade over time"] == paper.DISAGREE


def test_no_p_value_is_not_comparable_and_missing_files_say_so(tmp_path):
    _table1(tmp_path, internal_p=np.nan, external_p=np.nan, n=4)
    rows = {r["claim"]: r for r in paper.comparison("03", tmp_path)}
    row = rows["internal faithfulness does not correlate with accuracy (BFS)"]
    assert row["verdict"] == paper.NOT_COMPARABLE
    assert "n = 4" in row["ours"] and "10 seeds" in row["criterion"]
    missing = rows["none of the learned BFS solutions behaves like the compiled one"]
    assert missing["verdict"] == paper.MISSING
    assert "faithfulness_summary_bfs.csv" in missing["ours"]


def test_the_sentence_is_written_from_the_verdicts(tmp_path):
    _summary(tmp_path, "bfs", 0.995)
    _summary(tmp_path, "bellman_ford", 0.60)
    _table1(tmp_path, internal_p=0.40, external_p=0.01)
    _series(tmp_path, [0.2, 0.3, 0.8, 0.9], uniform_first=0.9, uniform_last=0.5)
    written = paper.write_comparison("03", tmp_path, {"profile": "test"})
    sentence = paper.verdict_sentence(written)
    found = paper.counts(files.read_table(written))
    assert sentence.startswith(
        f"Of the paper's {sum(found.values())} findings here, ours agree with "
        f"{found[paper.AGREE]}, disagree with {found[paper.DISAGREE]}"
    )
    assert "Not reproduced: external faithfulness does not correlate" in sentence
    assert (tmp_path / "paper_vs_ours_03.csv.json").exists()


def test_an_unknown_notebook_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no claims for notebook '09'"):
        paper.write_comparison("09", tmp_path)


def test_every_claim_names_where_the_paper_makes_it():
    for claim in paper.CLAIMS:
        assert claim.where and claim.claim and claim.paper
        assert claim.notebook in {"01", "02", "03", "04", "05", "06"}


def test_steps_no_sample_reaches_raise_no_warning(tmp_path):
    """A step that no graph's trace reaches is NaN in every seed's series; the
    verdict skips it without numpy's empty-slice warning."""
    import warnings

    nan = np.nan
    np.savez(
        tmp_path / "faithfulness_bfs.npz",
        series_internal_along_time=np.array(
            [[0.2, 0.3, 0.8, nan], [0.1, 0.4, 0.9, nan]]
        ),
        series_external_pi_h_uniform=np.array([[0.9, 0.5], [0.8, 0.4]]),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _verdicts("03", tmp_path)
    assert got[
        "BFS attention is slightly closer in the first two steps, then deviates"
    ] == (paper.AGREE)
