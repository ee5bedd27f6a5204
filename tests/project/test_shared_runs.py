"""The session's shared runs folder (tests/conftest.py), as the workers see it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_xdist_worker_gets_one_runs_folder(tmp_path):
    """Two tests pinned to two workers write where ``shared_runs`` points.

    With a folder per worker, notebook 04's control arms trained notebook
    02's baselines again on the other worker; with one, a run's lock makes
    the second worker wait and read it back.  Seen failing with the
    per-worker folder (``mktemp``): two paths.
    """
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_two.py").write_text(
        "import json, os, pytest\n"
        "@pytest.mark.parametrize('group', [\n"
        "    pytest.param(g, marks=pytest.mark.xdist_group(g)) for g in 'ab'\n"
        "])\n"
        "def test_write(group, shared_runs):\n"
        "    import time\n"
        "    time.sleep(1)  # both workers take one each\n"
        "    out = os.environ['SEEN_DIR']\n"
        "    worker = os.environ['PYTEST_XDIST_WORKER']\n"
        "    with open(os.path.join(out, group + '.json'), 'w') as f:\n"
        "        json.dump({'worker': worker, 'runs': str(shared_runs)}, f)\n"
    )
    seen = tmp_path / "seen"
    seen.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2"]
        + ["--dist", "loadgroup", "-q", "-c", "/dev/null", "test_two.py"]
        + ["--basetemp", str(tmp_path / "base")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "SEEN_DIR": str(seen)},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    records = [json.loads((seen / f"{g}.json").read_text()) for g in "ab"]
    assert len({r["worker"] for r in records}) == 2, records
    assert len({r["runs"] for r in records}) == 1, records
    assert Path(records[0]["runs"]).is_dir()
