"""dm-clrs without TensorFlow: nar_gap.tasks._clrs, the one boundary.

Every check runs in a subprocess: this worker may have loaded TensorFlow for
the parity tests. ``tasks/no_tensorflow/sitecustomize.py`` makes a process raise on
any import of TensorFlow, TensorFlow Datasets or Haiku.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from blocked_imports import without_tensorflow

import nar_gap.tasks._clrs as boundary
from nar_gap.tasks.vocabulary import ALGORITHMS

ROOT = Path(__file__).resolve().parents[2]

# Every algorithm nar_gap samples, through each of its samplers: the training
# stream at every training length, the CLRS-30 val and test splits (the test
# split's N = 64 for the ones that are quick to trace), a fixed batch.
DIGESTS = r"""
import hashlib, json, sys
import numpy as np
PRELUDE
from nar_gap.tasks.sampling import clrs_split, sample_batch, train_batch
from nar_gap.tasks.specs import ALGORITHMS
import jax

def digest(batch):
    h = hashlib.sha256()
    for path, leaf in jax.tree_util.tree_flatten_with_path(batch)[0]:
        array = np.asarray(leaf)
        h.update(jax.tree_util.keystr(path).encode())
        h.update(str((array.dtype, array.shape)).encode())
        h.update(np.ascontiguousarray(array).tobytes())
    return h.hexdigest()

found = {}
for algorithm in ALGORITHMS:
    for step in range(5):
        found[f"{algorithm}/train/{step}"] = digest(train_batch(algorithm, 7, step))
    found[f"{algorithm}/val"] = digest(clrs_split(algorithm, "val"))
    if algorithm in ("bfs", "bellman_ford"):
        found[f"{algorithm}/test"] = digest(clrs_split(algorithm, "test"))
    found[f"{algorithm}/fixed"] = digest(sample_batch(algorithm, 9, 4, seed=3))
print(json.dumps({"digests": found, "tensorflow": "tensorflow" in sys.modules}))
"""


def _python(code: str, blocked: bool, cwd: Path) -> subprocess.CompletedProcess:
    env = without_tensorflow(os.environ) if blocked else dict(os.environ)
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=600,
    )


def test_the_blocker_itself_refuses_tensorflow(tmp_path):
    blocked = _python("import tensorflow", blocked=True, cwd=tmp_path)
    assert blocked.returncode != 0
    assert "tensorflow is blocked in this process" in blocked.stderr


def test_batches_are_byte_identical_to_the_full_dm_clrs_import(tmp_path):
    light = _python(DIGESTS.replace("PRELUDE", ""), blocked=True, cwd=tmp_path)
    assert light.returncode == 0, light.stderr[-2000:]
    full = _python(
        DIGESTS.replace("PRELUDE", "import clrs  # the whole package, first"),
        blocked=False,
        cwd=tmp_path,
    )
    assert full.returncode == 0, full.stderr[-2000:]
    light, full = json.loads(light.stdout), json.loads(full.stdout)
    assert not light["tensorflow"] and full["tensorflow"]
    assert light["digests"] == full["digests"]
    # five train steps, val and a fixed batch each; test for BFS and Bellman-Ford
    assert len(light["digests"]) == len(ALGORITHMS) * 7 + 2


def test_import_sample_train_measure_and_compile_without_tensorflow(tmp_path):
    """The acceptance path: check-install imports nar_gap, samples every
    algorithm, compiles and checks BFS, Bellman-Ford and DFS against dm-clrs,
    trains a small run and measures its faithfulness."""
    done = _python(
        "import sys; from nar_gap.cli import main;"
        f" sys.exit(main(['check-install', '--out', {str(tmp_path / 'c')!r}]))",
        blocked=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-1000:] + done.stderr[-2000:]
    summary = json.loads((tmp_path / "c" / "check-install.json").read_text())
    assert [s["name"] for s in summary["stages"]] == [
        "backend",
        "sampling",
        "compiled",
        "training",
        "faithfulness",
    ]
    assert summary["tensorflow_loaded"] is False
    assert "TensorFlow not loaded" in done.stdout


def broken_dm_clrs(tmp_path: Path) -> Path:
    """A copy of dm-clrs whose samplers import TensorFlow (a future release)."""
    copy = tmp_path / "site" / "clrs"
    shutil.copytree(Path(boundary.clrs.__path__[0]), copy)
    samplers = copy / "_src" / "samplers.py"
    samplers.write_text("import tensorflow\n" + samplers.read_text())
    return copy


def test_a_dm_clrs_whose_light_modules_need_tensorflow_fails_in_one_line(tmp_path):
    """A future dm-clrs that imports TensorFlow in its samplers: one line
    naming dm-clrs's version, and no half-loaded clrs left behind."""
    copy = broken_dm_clrs(tmp_path)
    code = (  # the boundary raises while it is imported: catch its base class
        "import sys\n"
        f"sys.path.insert(0, {str(copy.parent)!r})\n"
        "try:\n"
        "    import nar_gap.tasks.sampling\n"
        "except ImportError as error:\n"
        "    print(type(error).__name__, error)\n"
        "    print(sorted(m for m in sys.modules if m.split('.')[0] == 'clrs'))\n"
    )
    done = _python(code, blocked=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    message, left = done.stdout.strip().splitlines()
    version = boundary.dmclrs_version()
    assert message.startswith(
        f"ClrsBoundaryError nar_gap cannot load dm-clrs {version} without TensorFlow ("
    )
    assert "'tensorflow'" in message
    assert left == "[]"


@pytest.mark.parametrize("name", ["Feedback", "CLRS30", "process_random_pos"])
def test_the_shell_package_carries_dm_clrs_public_names(name):
    from clrs._src import probing, samplers, specs

    modules = (probing, samplers, specs)
    assert any(getattr(boundary.clrs, name) is getattr(m, name, None) for m in modules)


def test_the_cli_says_so_in_one_line_too(tmp_path):
    copy = broken_dm_clrs(tmp_path)
    done = _python(
        f"import sys; sys.path.insert(0, {str(copy.parent)!r})\n"
        "from nar_gap.cli import main\n"
        "sys.exit(main(['info']))\n",
        blocked=True,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("nar-gap: error: nar_gap cannot load dm-clrs")
    assert done.stderr.count("\n") == 1
