"""The reference pages in docs/: a strict MkDocs build, and the layout table.

mkdocs.yml asks MkDocs to warn on a link to a missing page, file or anchor
and on a page left out of the nav; ``--strict`` turns any warning into a
failed build, and the test fails on any warning line even so.  The layout
table of docs/layout.md is typed by hand: a test keeps it naming every module
of the package, and nothing that is not one.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYOUT = ROOT / "docs" / "layout.md"


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"]
        + ["--config-file", str(config), "--site-dir", str(site)],
        capture_output=True,
        text=True,
        cwd=config.parent,
        timeout=300,
    )


def _warnings(done: subprocess.CompletedProcess) -> list[str]:
    return [
        line
        for line in (done.stdout + done.stderr).splitlines()
        if line.startswith(("WARNING", "ERROR"))
    ]


@pytest.mark.timeout(300)
def test_the_docs_build_strictly_without_a_warning(tmp_path):
    done = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0 and not _warnings(done), done.stderr[-3000:]
    assert (tmp_path / "site" / "results" / "index.html").is_file()
    assert (tmp_path / "site" / "figures" / "fig_stability_bfs.png").is_file()


@pytest.mark.timeout(300)
def test_a_broken_link_or_anchor_fails_the_build(tmp_path):
    """The check above can fail: the same pages with one broken anchor and
    one missing figure do not build (mkdocs.yml's validation, not a default,
    makes a broken anchor a warning)."""
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", copy / "docs")
    (copy / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "mkdocs_hooks.py", copy / "scripts")
    shutil.copy(ROOT / "mkdocs.yml", copy)
    (copy / "figures").symlink_to(ROOT / "figures")
    page = copy / "docs" / "tests.md"
    page.write_text(
        page.read_text()
        + "\n[gone](using.md#no-such-anchor) ![](../figures/no_such_figure.png)\n"
    )
    done = _build(copy / "mkdocs.yml", tmp_path / "site")
    found = "\n".join(_warnings(done))
    assert done.returncode != 0, done.stderr[-3000:]
    assert "no-such-anchor" in found and "no_such_figure.png" in found, found


# --------------------------------------------------------------------------- #
# docs/layout.md's table names every module, and only modules that exist.
# --------------------------------------------------------------------------- #

TOP_LEVEL = "top level"


def _layout_table() -> dict[str, str]:
    """``{module path: folder row}`` of every ``name.py`` the table names.

    A row is ``| `folder/` | `a.py` (what it is), `b.py`, ... |`` (the
    studies' folders as ``paper/<folder>/``); the row
    ``| top level | ... |`` names the modules of ``nar_gap/`` itself.
    """
    named = {}
    rows = re.findall(
        r"^\| (`[\w/]+/`|top level) \| (.*) \|$", LAYOUT.read_text(), re.M
    )
    assert rows, "docs/layout.md has no `| folder | modules |` table"
    for folder, modules in rows:
        prefix = "" if folder == TOP_LEVEL else folder.strip("`")
        for module in re.findall(r"`(\w+\.py)`", modules):
            named[f"nar_gap/{prefix}{module}"] = folder
    return named


def _modules() -> set[str]:
    return {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "nar_gap").rglob("*.py")
        if path.stem not in ("__init__", "__main__")
    }


def test_the_layout_table_names_every_module():
    missing = sorted(_modules() - set(_layout_table()))
    assert not missing, f"docs/layout.md's table does not name {missing}"


def test_every_module_the_layout_table_names_exists():
    stale = sorted(set(_layout_table()) - _modules())
    assert not stale, f"docs/layout.md's table names modules that are gone: {stale}"


def _transnar_row(name: str, sizes) -> str:
    """The row docs/transnar.md's sizes table must hold for profile ``name``."""

    def sizes_cell(values: tuple[int, ...]) -> str:
        return ", ".join(str(v) for v in values)

    layers = f"`{sizes.layers}` layer{'s' if sizes.layers > 1 else ''}"
    cells = [
        f"`{name}`",
        f"`{sizes.seeds}`",
        f"`{sizes.steps}`",
        f"`{sizes.batch_size}`",
        f"`{sizes_cell(sizes.train_sizes)}`",
        f"`{sizes_cell(sizes.test_sizes)}`",
        f"`{sizes.label_range}`",
        f"`{sizes.eval_graphs}`",
        f"width `{sizes.width}`, {layers}, `{sizes.heads}` heads",
    ]
    return "| " + " | ".join(cells) + " |"


def test_the_transnar_page_s_sizes_table_is_notebook_08_s_sizes():
    # The page once said 1000 steps at cpu while the code trained 50.
    from nar_gap.paper.experiments.transnar import SIZES

    page = (ROOT / "docs" / "transnar.md").read_text()
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    expected = [_transnar_row(name, sizes) for name, sizes in SIZES.items()]
    assert rows == expected
