"""Old import paths: they keep working, warn once with the removal version,
and none of them runs on ``import nar_gap``."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nar_gap.system import legacy


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning:__main__", "-c", code],
        capture_output=True,
        text=True,
    )


def test_import_nar_gap_loads_no_legacy_module():
    done = _run(
        "import sys, nar_gap\n"
        "legacy = {'nar_gap._moved', 'nar_gap.train', 'nar_gap.faithfulness',"
        " 'nar_gap.system.legacy'}\n"
        "print(sorted(legacy & set(sys.modules)))"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_a_flat_layout_module_says_where_it_went():
    import nar_gap

    with pytest.raises(ModuleNotFoundError, match="nar_gap.experiments.*0.3.0"):
        from nar_gap import pipeline  # noqa: F401
    with pytest.raises(ModuleNotFoundError, match="nar_gap.system.files"):
        nar_gap.io  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        nar_gap.no_such_name  # noqa: B018


@pytest.mark.parametrize(
    "statement, new",
    [
        ("from nar_gap.train import TrainConfig", "nar_gap.training.TrainConfig"),
        ("from nar_gap.train import RunResult", "nar_gap.training.TrainResult"),
        ("from nar_gap.faithfulness import Models", "nar_gap.analysis"),
        ("from nar_gap.tasks.shapes import bucket_shape", "nar_gap.tasks.buckets"),
        (
            "from nar_gap.tasks.steps import internal_steps",
            "nar_gap.tasks.counted_steps",
        ),
        (
            "from nar_gap.tasks.batch import validate_batch as v; "
            "v(nar_gap.data.sample_batch('bfs', 4, 1, seed=0))",
            "nar_gap.tasks.batch.check_batch",
        ),
        (
            "from nar_gap.experiments import landscapes",
            "nar_gap.experiments.landscape_study",
        ),
    ],
)
def test_an_old_path_works_and_warns_once_with_the_removal_version(statement, new):
    code = (
        "import warnings, nar_gap\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        f"    {statement}\n"
        f"    {statement}\n"
        "print(len(caught), caught[0].category.__name__ if caught else '',"
        " caught[0].message if caught else '')"
    )
    done = _run(code)
    assert done.returncode == 0, done.stderr[-2000:]
    count, category, message = done.stdout.strip().split(" ", 2)
    assert (count, category) == ("1", "DeprecationWarning")
    assert new in message and legacy.REMOVAL in message


def test_the_train_verb_is_not_deprecated():
    import nar_gap

    assert callable(nar_gap.train)
    assert nar_gap.data.sample_batch


def test_an_alias_module_is_the_new_module(monkeypatch):
    monkeypatch.setattr(legacy, "_warned", set())
    monkeypatch.delitem(sys.modules, "nar_gap._old_alias", raising=False)
    with pytest.warns(DeprecationWarning, match="0.3.0"):
        module = legacy.alias_module("nar_gap._old_alias", "nar_gap.system.legacy")
    assert module is legacy and sys.modules["nar_gap._old_alias"] is legacy
    sys.modules.pop("nar_gap._old_alias")


def test_the_backend_verdict_keeps_its_old_name_with_a_warning(monkeypatch):
    from nar_gap.system import backend_check

    monkeypatch.setattr(legacy, "_warned", set())
    with pytest.warns(DeprecationWarning, match="BackendVerdict.*0.3.0"):
        assert backend_check.Verdict is backend_check.BackendVerdict


def test_the_flat_layout_s_evaluate_is_score_seeds_with_a_warning(monkeypatch):
    import nar_gap
    from nar_gap.model.seeds import score_seeds

    monkeypatch.setattr(legacy, "_warned", set())
    with pytest.warns(DeprecationWarning, match="score_seeds.*0.3.0"):
        assert nar_gap.evaluate is score_seeds


def test_the_old_name_of_score_batch_warns_and_gives_the_same_scores(monkeypatch):
    from nar_gap.model import scores

    monkeypatch.setattr(legacy, "_warned", set())
    monkeypatch.setattr(scores, "score_batch", lambda *args: ("scored", args))
    with pytest.warns(DeprecationWarning, match="score_batch.*0.3.0"):
        assert scores.scores(1, 2, 3) == ("scored", (1, 2, 3))


def test_the_renamed_package_s_old_name_gives_the_same_modules():
    code = (
        "import warnings, nar_gap\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    import nar_gap.benchmark.specs as old\n"
        "    from nar_gap.benchmark.batch import Batch as OldBatch\n"
        "import nar_gap.tasks.specs as new\n"
        "from nar_gap.tasks.batch import Batch\n"
        "print(old is new, OldBatch is Batch,"
        " sorted({str(w.message).split(' moved')[0] for w in caught}))"
    )
    done = _run(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("True True "), done.stdout
    assert (
        "nar_gap.benchmark" in done.stdout and "nar_gap.benchmark.specs" in done.stdout
    )
