"""Notebook 08's verdicts and answer, on results built to say yes and no.

The claims against TransNAR's published trend and the computed answer to the
notebook's question read ``transnar_<algorithm>.csv``; here they read tables
written by hand, on which each must come out one way and then the other.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from nar_gap.analysis.verdicts import AGREE, DISAGREE, INCONCLUSIVE, NOT_TESTABLE
from nar_gap.paper import plots
from nar_gap.paper.experiments import profiles, transnar
from nar_gap.paper.report import paper
from nar_gap.paper.transnar import scores as text_scores
from nar_gap.paper.transnar import summary as text_summary
from nar_gap.paper.transnar import training as text_training
from nar_gap.system import files

MODELS = ("transformer", "transnar_trained", "transnar_compiled")


def _rows(scores: dict[str, tuple[float, float]], seeds: int = 4) -> list[dict]:
    """Per model (in-distribution, out-of-distribution) CLRS, with seed noise."""
    rows = []
    for model, (inside, outside) in scores.items():
        for seed in range(seeds):
            noise = 0.01 * (seed - 1.5)
            for num_nodes, value in ((4, inside), (10, outside), (20, outside)):
                clrs = (
                    min(1.0, max(0.0, value + noise)) if value not in (0, 1) else value
                )
                rows.append(
                    {
                        "model": model,
                        "nar": model.removeprefix("transnar_"),
                        "seed": seed,
                        "num_nodes": num_nodes,
                        "in_distribution": num_nodes == 4,
                        "graphs": 8,
                        "shape": 1.0,
                        "parse": 1.0,
                        "clrs": clrs,
                        "content": clrs,
                        "nar_clrs": 1.0 if model == "transnar_compiled" else math.nan,
                    }
                )
    return rows


def _rules(one_hop_inside: float = 0.8) -> list[dict]:
    """A rules table: ``one_hop`` scores ``one_hop_inside`` in distribution."""
    return [
        {"num_nodes": n, "in_distribution": n == 4, "graphs": 8, "self": 0.5,
         "one_hop": one_hop_inside if n == 4 else 0.4}
        for n in (4, 10, 20)
    ]  # fmt: skip


def _verdicts(tmp_path, rows, rules=None) -> dict[str, str]:
    for algorithm in ("bfs", "bellman_ford"):
        files.write_table(tmp_path / f"transnar_{algorithm}.csv", rows)
        files.write_table(
            tmp_path / f"transnar_rules_{algorithm}.csv", rules or _rules()
        )
    return {r["claim"]: r["verdict"] for r in paper.comparison("08", tmp_path)}


def test_the_published_trend_is_agreed_with_only_when_our_numbers_show_it(tmp_path):
    trend = _rows(
        {
            "transformer": (0.95, 0.1),
            "transnar_trained": (0.95, 0.6),
            "transnar_compiled": (0.95, 1.0),
        }
    )
    assert set(_verdicts(tmp_path, trend).values()) == {AGREE}
    against = _rows(
        {
            "transformer": (0.95, 0.98),
            "transnar_trained": (0.95, 0.2),
            "transnar_compiled": (0.95, 0.2),
        }
    )
    assert set(_verdicts(tmp_path, against).values()) == {DISAGREE}
    flat = _rows({m: (0.95, 0.95) for m in MODELS})
    assert set(_verdicts(tmp_path, flat).values()) == {INCONCLUSIVE}
    # models not competent in distribution: a fall outside it means nothing
    weak = _rows({m: (0.5, 0.0) for m in MODELS})
    assert set(_verdicts(tmp_path, weak).values()) == {NOT_TESTABLE}


def test_a_model_no_better_than_one_hop_in_distribution_is_not_competent(tmp_path):
    """Above the bar but not above what one hop without search scores on the
    same graphs: the rows are not testable, and say why; the same models
    above a weaker rule are judged."""
    trend = _rows(
        {
            "transformer": (0.92, 0.1),
            "transnar_trained": (0.92, 0.6),
            "transnar_compiled": (0.92, 1.0),
        }
    )
    assert set(_verdicts(tmp_path, trend, _rules(0.85)).values()) == {AGREE}
    assert set(_verdicts(tmp_path, trend, _rules(0.93)).values()) == {NOT_TESTABLE}
    evidence = [r["evidence"] for r in paper.comparison("08", tmp_path)]
    assert all("one_hop rule's 0.930" in e for e in evidence)
    (tmp_path / "transnar_rules_bfs.csv").unlink()
    verdicts = {r["claim"]: r["verdict"] for r in paper.comparison("08", tmp_path)}
    assert {v for c, v in verdicts.items() if c.startswith("BFS")} == {NOT_TESTABLE}


def test_the_rules_are_scored_on_the_models_graphs_and_drawn():
    texts = {n: transnar.evaluation_texts("bfs", n, 16, 10) for n in (4, 10)}
    rows = transnar.rule_rows(texts, (4,))
    assert [(r["num_nodes"], r["in_distribution"], r["graphs"]) for r in rows] == [
        (4, True, 16),
        (10, False, 16),
    ]
    for row, batch in zip(rows, texts.values(), strict=True):
        assert row["one_hop"] == text_scores.rule_scores(batch.graphs)["one_hop"]
        assert row["self"] <= row["one_hop"]
    summary = text_summary.summarise(_rows({m: (0.5, 0.25) for m in MODELS}))
    fig = plots.plot_transnar_scores(summary, "bfs", 5, rows)
    clrs_panel = fig.axes[2]
    assert {line.get_label() for line in clrs_panel.lines} >= {
        "rule: one_hop",
        "rule: self",
    }
    legend = [text.get_text() for text in clrs_panel.get_legend().get_texts()]
    assert legend == ["rule: one_hop", "rule: self"]  # the models' is the first panel's
    plots.close(fig)


def test_without_the_results_the_claims_are_not_testable(tmp_path):
    rows = paper.comparison("08", tmp_path)
    assert len(rows) == 4
    assert {r["verdict"] for r in rows} == {NOT_TESTABLE}
    assert all("notebook 08" in r["evidence"] for r in rows)


def test_the_question_is_answered_from_the_rows():
    exact = _rows(
        {
            "transformer": (0.9, 0.1),
            "transnar_trained": (0.9, 0.3),
            "transnar_compiled": (0.9, 1.0),
        }
    )
    (row,) = text_summary.question_rows({"bfs": exact})
    assert row["compiled_hybrid_exact"] is True
    assert row["compiled_above_trained"] == AGREE
    assert row["trained_above_transformer"] == AGREE
    assert row["ood_sizes"] == "10 20" and row["seeds"] == 4
    assert row["compiled_nar_alone"] == 1.0
    assert row["shape_transformer"] == 1.0
    assert "exact" in text_summary.question_sentence([row])
    short = _rows(
        {
            "transformer": (0.9, 0.3),
            "transnar_trained": (0.9, 0.3),
            "transnar_compiled": (0.9, 0.97),
        }
    )
    (row,) = text_summary.question_rows({"bfs": short})
    assert row["compiled_hybrid_exact"] is False
    assert row["trained_above_transformer"] == INCONCLUSIVE
    assert "not exact" in text_summary.question_sentence([row])


def test_the_summary_is_over_seeds_and_the_figure_draws_it():
    rows = _rows({m: (0.5, 0.25) for m in MODELS})
    summary = text_summary.summarise(rows)
    assert len(summary) == 3 * 3
    first = summary[0]
    assert first["seeds"] == 4
    assert first["clrs_mean"] == pytest.approx(0.5)
    assert first["clrs_std"] == pytest.approx(0.0112, abs=1e-3)  # population std
    assert math.isnan(first["nar_clrs_mean"])  # the Transformer has no NAR
    assert first["content_mean"] == pytest.approx(0.5) and first["content_seeds"] == 4
    fig = plots.plot_transnar_scores(summary, "bfs", 5)
    assert len(fig.axes) == 4  # shape, parse, CLRS, content
    plots.close(fig)


def test_each_profile_has_sizes_and_a_dry_run_cuts_them():
    for name in ("smoke", "cpu", "paper"):
        sizes = transnar.sizes_for(profiles.get(name))
        assert sizes.seeds >= 3
        larger = [n for n in sizes.test_sizes if n > max(sizes.train_sizes)]
        assert len(larger) >= 2, name
        assert max(larger) >= 4 * max(sizes.train_sizes), name
        ends = {min(sizes.train_sizes), max(sizes.train_sizes)}
        assert ends <= set(sizes.test_sizes), name  # in distribution, both ends
        dry = transnar.sizes_for(profiles.get(f"{name}-dry"))
        assert (dry.steps, dry.eval_graphs) == (1, 2)
        assert dry.test_sizes == sizes.test_sizes and dry.seeds == sizes.seeds


def test_one_run_directory_per_configuration():
    profile = profiles.get("smoke")
    names = {
        text_training.text_run_dir(
            transnar.text_train_config(profile, a, kind, seed), "runs"
        )
        for a in ("bfs", "bellman_ford")
        for kind in transnar.NAR_KINDS
        for seed in range(3)
    }
    assert len(names) == 18
    config = transnar.text_train_config(profile, "bfs", "compiled", 0)
    assert config.model.nar_width == transnar.COMPILED_HIDDEN
    trained = transnar.text_train_config(profile, "bfs", "trained", 0)
    assert trained.model.nar_width == profile.baseline_sizes("bfs").hidden_size


def test_content_is_the_clrs_score_where_the_shape_is_right():
    scores = {
        "shape": np.array([1.0, 1.0, 0.0]),
        "parse": np.array([1.0, 1.0, 1.0]),
        "clrs": np.array([1.0, 0.5, 0.0]),
    }
    assert text_scores.content_score(scores) == pytest.approx(0.75)  # not 0.5
    none = {name: np.zeros(3) for name in scores}
    assert math.isnan(text_scores.content_score(none))
    # seeds without an answer of the right length leave the content's mean
    rows = _rows({m: (0.5, 0.25) for m in MODELS})
    for row in rows:
        if row["seed"] == 0:
            row["content"] = math.nan
    first = text_summary.summarise(rows)[0]
    assert first["content_seeds"] == 3 and first["seeds"] == 4
    assert first["content_mean"] == pytest.approx(0.5 + 0.01 * 0.5)


def test_every_size_scored_names_nodes_by_labels_training_wrote():
    # labels are drawn below the largest size scored: a larger graph's answer
    # needs no number the training answers did not hold
    for name in ("smoke", "cpu", "gpu", "paper"):
        profile = profiles.get(name)
        sizes = transnar.sizes_for(profile)
        assert sizes.label_range == max(sizes.test_sizes)
        for kind in transnar.NAR_KINDS:
            config = transnar.text_train_config(profile, "bfs", kind, 0)
            assert config.label_range == sizes.label_range


def _curves() -> dict[str, dict]:
    """The committed CPU competence curves, by file name."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    found = (root / "benchmarks" / "results").glob("transnar_competence_*_cpu.json")
    return {path.name: json.loads(path.read_text()) for path in sorted(found)}


def _above(result: dict, other: str | dict, row: dict, index: int = 0) -> list[bool]:
    """Per training size, whether checkpoint ``row`` of ``result`` scores above
    a rule (``other``: its name) or checkpoint ``index`` of another curve."""
    if isinstance(other, str):
        return [row[n]["clrs"] > result["rules"][n][other] for n in ("4", "5")]
    mate = other["rows"][index]
    assert mate["step"] == row["step"]
    return [row[n]["clrs"] > mate[n]["clrs"] for n in ("4", "5")]


def _transnar_s_choices(result: dict) -> bool:
    """Trained on the notebook's text with its positions (labels, randomised)."""
    config = result["config"]
    randomised = config["model"].get("positions", "randomised") == "randomised"
    return randomised and config["label_range"] is not None


def test_the_competence_curves_docs_cite_stay_below_the_bar():
    # docs/transnar.md says no measured curve of the notebook's text and
    # positions reaches the bar in distribution; this keeps that sentence
    # true of the files it cites
    from nar_gap.paper.report.rules import COMPETENT_CLRS

    curves = {k: v for k, v in _curves().items() if _transnar_s_choices(v)}
    # BFS: the Transformer's five (sinusoidal, seed 0), two hybrids; BF's
    # one; the encoding's five (sinusoidal seed 1, rotary seeds 0 and 1,
    # rotary windows, the rotary compiled hybrid), both encodings' two, and
    # their two with the slow frequencies alone
    assert len(curves) == 17
    for name, result in curves.items():
        inside = [str(n) for n in result["config"]["train_sizes"]]
        best = max(np.mean([row[n]["clrs"] for n in inside]) for row in result["rows"])
        assert 0 < best < COMPETENT_CLRS, name


def test_the_choices_paragraph_says_what_its_five_curves_hold():
    # docs/transnar.md, "What the two choices for larger graphs cost": with
    # index positions and index names the Transformer is above the one_hop
    # rule at both training sizes, and above the bar, from the first
    # checkpoint on; with either choice kept it is above one_hop at both
    # sizes at no checkpoint; with both kept below the self rule at both
    # sizes throughout; without an encoding it ends between the rules.  At
    # twice the size only the notebook's choices write answers of the right
    # shape at every checkpoint; index positions and randomised positions
    # with index names at none; no encoding at its first two only.
    from nar_gap.paper.report.rules import COMPETENT_CLRS

    stem = "transnar_competence_w64_l2_positions_{}_cpu.json"
    curves = _curves()
    runs = {
        name: curves[stem.format(name)]
        for name in ("indices_index_names", "indices", "randomised_index_names",
                     "randomised", "none")
    }  # fmt: skip
    for name, result in runs.items():
        config = result["config"]
        assert config["model"]["positions"] == name.removesuffix("_index_names")
        assert (config["label_range"] is None) == name.endswith("_index_names")
        assert [row["step"] for row in result["rows"]] == list(range(1000, 6001, 1000))
        assert result["graphs_per_size"] == 32 and config["train_sizes"] == [4, 5]

    both_undone = runs["indices_index_names"]
    for row in both_undone["rows"]:
        assert all(_above(both_undone, "one_hop", row))
        assert (row["4"]["clrs"] + row["5"]["clrs"]) / 2 >= COMPETENT_CLRS
    for name in ("indices", "randomised_index_names", "randomised", "none"):
        result = runs[name]
        assert not any(all(_above(result, "one_hop", r)) for r in result["rows"]), name
    for row in runs["randomised"]["rows"]:
        assert not any(_above(runs["randomised"], "self", row))
    last = runs["none"]["rows"][-1]
    assert all(_above(runs["none"], "self", last))
    assert not any(_above(runs["none"], "one_hop", last))
    twice = {name: [r["10"]["shape"] for r in v["rows"]] for name, v in runs.items()}
    assert min(twice["randomised"]) > 0
    for name in ("indices", "indices_index_names", "randomised_index_names"):
        assert max(twice[name]) == 0, name
    assert min(twice["none"][:2]) > 0 and max(twice["none"][2:]) == 0


def test_bellman_ford_s_two_ends_say_the_same():
    # docs/transnar.md: with both choices undone, above one_hop at both
    # training sizes and above the bar from step 4 000 on, no right shape at
    # 2x; with both kept, below self throughout, the right shape at 2x from
    # step 2 000 on.
    from nar_gap.paper.report.rules import COMPETENT_CLRS

    stem = "transnar_competence_bellman_ford_w64_l2_positions_{}_cpu.json"
    curves = _curves()
    undone = curves[stem.format("indices_index_names")]
    kept = curves[stem.format("randomised")]
    for result in (undone, kept):
        assert result["config"]["algorithm"] == "bellman_ford"
    assert _transnar_s_choices(kept) and not _transnar_s_choices(undone)
    for row in undone["rows"]:
        above = [row[n]["clrs"] > undone["rules"][n]["one_hop"] for n in ("4", "5")]
        mean = (row["4"]["clrs"] + row["5"]["clrs"]) / 2
        assert (all(above) and mean >= COMPETENT_CLRS) == (row["step"] >= 4000)
        assert row["10"]["shape"] == 0
    for row in kept["rows"]:
        assert all(row[n]["clrs"] < kept["rules"][n]["self"] for n in ("4", "5"))
        assert (row["10"]["shape"] > 0) == (row["step"] >= 2000)


def test_the_encoding_paragraph_says_what_its_twelve_curves_hold():
    # docs/transnar.md, "What the encoding changes": on the notebook's text
    # and draw, for seeds 0 and 1, rotary is above sinusoidal at both
    # training sizes at every checkpoint, above one_hop at both at none, and
    # writes no right shape at 2x, where sinusoidal writes some at every
    # checkpoint; the compiled hybrid: above its sinusoidal twin at every
    # checkpoint, above self from step 3 000, never above one_hop, shape at
    # 2x at its first two checkpoints only; index positions: never above
    # one_hop, no shape at 2x; windows: below whole-range rotary from step
    # 2 000, no shape at 2x; both encodings (seeds 0 and 1): below rotary
    # of the same seed at both sizes throughout, never above self, the right
    # shape at 2x at every checkpoint; the slow frequencies alone (seeds 0
    # and 1): above sinusoidal and above both with every frequency at both
    # sizes throughout, the right shape at 2x at every checkpoint but seed
    # 0's first, at the last below a third of its largest, none at 4x,
    # never above one_hop.
    curves = _curves()

    def curve(arm):
        return curves[f"transnar_competence_w64_l2_{arm}_cpu.json"]

    def shapes(result):
        return [row["10"]["shape"] for row in result["rows"]]

    pairs = {
        "positions_randomised_rotary": "positions_randomised",
        "positions_randomised_rotary_seed1": "positions_randomised_seed1",
        "compiled_rotary": "compiled",
        "windows_rotary": "positions_randomised_rotary",
    }
    for rotary_arm, other_arm in pairs.items():
        rotary, other = curve(rotary_arm), curve(other_arm)
        assert rotary["config"]["model"]["encoding"] == "rotary", rotary_arm
        assert other["config"]["model"].get("encoding", "sinusoidal") == (
            "rotary" if rotary_arm.startswith("windows") else "sinusoidal"
        )
        assert rotary["config"]["seed"] == other["config"]["seed"]
        assert rotary["config"]["label_range"] is not None
        assert rotary["graphs_per_size"] == 32
        assert [r["step"] for r in rotary["rows"]] == list(range(1000, 6001, 1000))
        for row in rotary["rows"]:
            assert not all(_above(rotary, "one_hop", row)), rotary_arm
    assert curve("windows_rotary")["config"]["position_windows"]
    assert curve("compiled_rotary")["config"]["nar"] == "compiled"
    for arm in ("positions_randomised_rotary", "positions_randomised_rotary_seed1"):
        rotary, sinusoidal = curve(arm), curve(pairs[arm])
        for index, row in enumerate(rotary["rows"]):
            assert all(_above(rotary, sinusoidal, row, index)), (arm, row["step"])
        assert max(shapes(rotary)) == 0 and min(shapes(sinusoidal)) > 0
    hybrid = curve("compiled_rotary")
    for index, row in enumerate(hybrid["rows"]):
        assert all(_above(hybrid, curve("compiled"), row, index))
        assert all(_above(hybrid, "self", row)) == (row["step"] >= 3000)
    assert [s > 0 for s in shapes(hybrid)] == [True, True] + [False] * 4
    indices = curve("positions_indices_rotary")
    assert indices["config"]["model"]["positions"] == "indices"
    assert indices["config"]["model"]["encoding"] == "rotary"
    assert indices["config"]["label_range"] is not None
    assert not any(all(_above(indices, "one_hop", row)) for row in indices["rows"])
    assert max(shapes(indices)) == 0
    windows = curve("windows_rotary")
    for index, row in enumerate(windows["rows"]):
        whole = curve("positions_randomised_rotary")
        below = [not b for b in _above(windows, whole, row, index)]
        assert all(below) or row["step"] < 2000, row["step"]
    assert max(shapes(windows)) == 0
    for seed in ("", "_seed1"):
        both = curve(f"positions_randomised_sinusoidal_rotary{seed}")
        rotary = curve(f"positions_randomised_rotary{seed}")
        assert both["config"]["model"]["encoding"] == "sinusoidal_rotary"
        assert both["config"]["seed"] == rotary["config"]["seed"]
        assert both["config"]["label_range"] is not None
        assert [r["step"] for r in both["rows"]] == list(range(1000, 6001, 1000))
        for index, row in enumerate(both["rows"]):
            assert not any(_above(both, rotary, row, index)), (seed, row["step"])
            assert not any(_above(both, "self", row)), (seed, row["step"])
        assert min(shapes(both)) > 0
        slow = curve(f"positions_randomised_sinusoidal_rotary_slow1024{seed}")
        model = slow["config"]["model"]
        assert model["encoding"] == "sinusoidal_rotary"
        assert model["min_wavelength"] == 1024
        assert slow["config"]["seed"] == both["config"]["seed"]
        sinusoidal = curve(f"positions_randomised{seed}")
        for index, row in enumerate(slow["rows"]):
            assert all(_above(slow, sinusoidal, row, index)), (seed, row["step"])
            assert all(_above(slow, both, row, index)), (seed, row["step"])
            assert not all(_above(slow, "one_hop", row)), (seed, row["step"])
            assert row["20"]["shape"] == 0
        twice = shapes(slow)
        assert [s > 0 for s in twice] == [seed == "_seed1"] + [True] * 5
        assert twice[-1] < max(twice) / 3


def test_the_hybrids_paragraph_says_what_its_curves_hold():
    # docs/transnar.md, "The hybrids on the notebook's text": from step 4 000
    # on both hybrids score above the Transformer alone at both training
    # sizes, and write answers of the right shape at twice the size at every
    # checkpoint; neither reaches the self rule at 4 nodes at any checkpoint;
    # no layer reads the named node as often as always reading the source.
    curves = _curves()
    alone = curves["transnar_competence_w64_l2_positions_randomised_cpu.json"]
    for kind in ("compiled", "trained"):
        hybrid = curves[f"transnar_competence_w64_l2_{kind}_cpu.json"]
        assert hybrid["config"]["nar"] == kind and _transnar_s_choices(hybrid)
        assert hybrid["rules"] == alone["rules"]  # the same graphs
        pairs = list(zip(hybrid["rows"], alone["rows"], strict=True))
        for mine, its in pairs:
            assert mine["step"] == its["step"]
            if mine["step"] >= 4000:
                assert all(mine[n]["clrs"] > its[n]["clrs"] for n in ("4", "5"))
            assert mine["10"]["shape"] > 0, (kind, mine["step"])
            assert mine["4"]["clrs"] < hybrid["rules"]["4"]["self"], kind
            for size in ("4", "5", "10", "20"):
                for read in mine[size]["reads"]:  # each layer: no lookup
                    assert read["reads_named_node"] < read["source_named"], read


def _denser(row: dict) -> list[dict]:
    """A checkpoint's scores at its training sizes with denser positions."""
    return [scores for key, scores in row.items() if "@" in key]


def test_the_positions_paragraph_says_what_its_two_curves_hold():
    # docs/transnar.md, "What the positions teach": trained on the whole
    # range, the Transformer writes no answer of the right shape at its own
    # training sizes once positions are 2 or 4 times denser; trained on
    # windows it does from step 4 000 on; neither has the shape at 4x the
    # size; at 2x the whole-range model keeps some at every checkpoint and
    # the windowed one has none from step 6 000 on.  At 2x the whole-range
    # model closes every list, off by about one item; the windowed one is
    # off by 2 to 6, and from step 10 000 fewer than one in ten closes.
    curves = _curves()
    whole = curves["transnar_competence_w64_l2_densities_cpu.json"]
    windows = curves["transnar_competence_w64_l2_windows_cpu.json"]
    assert not whole["config"]["position_windows"]
    assert windows["config"]["position_windows"]
    for result in (whole, windows):
        assert [row["step"] for row in result["rows"]] == list(range(2000, 12001, 2000))
        assert all(len(_denser(row)) == 4 for row in result["rows"])
        assert all(row["20"]["shape"] == 0 for row in result["rows"])
    for row in whole["rows"]:
        assert max(scores["shape"] for scores in _denser(row)) == 0
        assert row["4"]["shape"] > 0.5 and row["5"]["shape"] > 0.5
        assert row["10"]["shape"] > 0
        assert row["10"]["closed"] == 1 and row["10"]["length_error"] <= 1
    for row in windows["rows"]:
        if row["step"] >= 4000:
            assert min(scores["shape"] for scores in _denser(row)) > 0.5
            assert min(scores["parse"] for scores in _denser(row)) > 0.9
        if row["step"] >= 6000:
            assert row["10"]["shape"] == 0
        assert 2 <= row["10"]["length_error"] <= 6
        if row["step"] >= 10000:
            assert row["10"]["closed"] < 0.1


def test_a_label_range_below_the_training_sizes_is_refused():
    import dataclasses

    config = transnar.text_train_config(profiles.get("cpu"), "bfs", "none", 0)
    with pytest.raises(ValueError, match="label_range 4 is below the largest training"):
        dataclasses.replace(config, label_range=4)
    assert dataclasses.replace(config, label_range=None).label_range is None
