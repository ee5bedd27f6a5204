"""The README and the reference pages in docs/: examples run, numbers rendered.

Every ```python block of README.md and of docs/*.md is executed in a fresh
namespace (self-contained: it imports and builds what it uses), all in one
child process whose working directory is a temporary folder, so examples that
write files write there.  The rendered parts (docs/results.md's results,
README.md's headline, docs/benchmark.md's table) must be what their renderers
make of the committed files, and no page types a result anywhere else.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
RESULTS_PAGE = DOCS / "results.md"
BENCHMARK_PAGE = DOCS / "benchmark.md"
README_LINES = 300
BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


def _pages() -> list[Path]:
    """README.md, then every page of docs/."""
    return [README, *sorted(DOCS.glob("*.md"))]


def _between(text: str, start: str, end: str) -> str:
    return text.split(start + "\n")[1].split(end)[0]


RUNNER = """
import json, sys, traceback
blocks = json.load(sys.stdin)
for index, (name, code) in enumerate(blocks):
    try:
        exec(compile(code, name, "exec"), {"__name__": "__main__"})
    except Exception:
        print(json.dumps({"block": name, "error": traceback.format_exc()}))
        sys.exit(1)
print(json.dumps({"ran": len(blocks)}))
"""


def _blocks() -> list[tuple[str, str]]:
    """Every page's ```python blocks, in page order, each with its name."""
    return [
        (f"{page.relative_to(ROOT)} block {index}", code)
        for page in _pages()
        for index, code in enumerate(BLOCK.findall(page.read_text()), start=1)
    ]


def test_the_pages_have_python_examples():
    assert len(_blocks()) >= 6


@pytest.mark.timeout(600)
def test_every_python_block_of_the_pages_runs_on_its_own(tmp_path):
    blocks = _blocks()
    done = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=json.dumps(blocks),
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "{}"
    report = json.loads(last) if last.startswith("{") else {}
    assert done.returncode == 0, report.get("error") or done.stderr[-3000:]
    assert report == {"ran": len(blocks)}


def test_the_benchmark_table_is_the_saved_run_rendered():
    """docs/benchmark.md's numbers come from the saved JSON, not by hand."""
    import importlib.util

    root = ROOT
    spec = importlib.util.spec_from_file_location(
        "train_throughput", root / "benchmarks" / "train_throughput.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    saved = json.loads(
        (root / "benchmarks" / "results" / "train_throughput_cpu.json").read_text()
    )
    between = _between(
        BENCHMARK_PAGE.read_text(), "<!-- benchmark:start -->", "<!-- benchmark:end -->"
    )
    assert between.strip() == module.markdown_report(saved).strip()


def test_the_results_section_is_the_results_files_rendered():
    """Every number and verdict in docs/results.md's results section comes
    from results/: the section is exactly what the renderer makes of those
    files."""
    from nar_gap.paper.report import readme_results

    text = RESULTS_PAGE.read_text()
    between = _between(text, readme_results.START, readme_results.END)
    assert between.strip() == readme_results.render(ROOT / "results").strip()


def test_each_other_profile_s_page_is_its_results_rendered():
    """A profile with committed results of its own (``results/gpu/``) has a
    page, docs/results-<profile>.md, whose section is exactly what the
    renderer makes of that folder."""
    from nar_gap.paper.experiments import profiles
    from nar_gap.paper.report import readme_results

    others = profiles.committed_results(ROOT / "results")[1:]
    assert others  # the gpu profile's, at least
    for profile, folder in others:
        page = (DOCS / f"results-{profile}.md").read_text()
        between = _between(page, readme_results.START, readme_results.END)
        assert between.strip() == readme_results.render(folder).strip(), profile


def test_a_profile_that_runs_some_notebooks_renders_theirs_only(tmp_path):
    """The gpu profile runs notebooks 02 and 03: its folder renders their
    parts, named as its own, and no missing-file line for the notebooks it
    never runs; the same files under the cpu profile's name render them all."""
    import shutil

    from nar_gap.paper.report import readme_results
    from nar_gap.system import files

    results = tmp_path / "gpu"
    shutil.copytree(ROOT / "results" / "gpu", results)
    rendered = readme_results.render(results)
    assert rendered.startswith("Rendered from `results/gpu/` (profile `gpu`)")
    assert "**Baselines (notebook 02)**" in rendered
    assert "**Faithfulness (notebook 03)**" in rendered
    assert "notebook 04" not in rendered and "(no `" not in rendered
    for sidecar in results.glob("*.json"):
        files.write_json_atomic(sidecar, {**files.read_json(sidecar), "profile": "cpu"})
    every = readme_results.render(results)
    assert every.startswith("Rendered from `results/` (profile `cpu`)")
    assert "**Ablations (notebook 04)**" in every and "(no `" in every


def test_a_profile_folder_renders_the_notebooks_it_holds_and_names_the_rest(
    tmp_path,
):
    """The studies profile's notebooks run one at a time (hours each): a
    folder holding notebook 03's tables but not 02's renders 03 and says in
    one line that 02 has not run, with no missing-file line for its parts."""
    import shutil

    from nar_gap.paper.report import readme_results
    from nar_gap.system import files

    results = tmp_path / "gpu"
    shutil.copytree(ROOT / "results" / "gpu", results)
    for sidecar in results.glob("*.json"):
        if files.read_json(sidecar).get("notebook", "").startswith("02"):
            sidecar.unlink()
            sidecar.with_suffix("").unlink()
    rendered = readme_results.render(results)
    assert "No tables here from notebook 02 of this profile: not run." in rendered
    assert "**Faithfulness (notebook 03)**" in rendered
    assert "notebook 02)" not in rendered and "(no `" not in rendered


def test_the_readme_headline_is_the_paper_vs_ours_files_counted():
    """The README's headline table counts the committed paper_vs_ours_NN.csv
    files' verdicts: exactly what the renderer makes of them."""
    from nar_gap.paper.report import readme_results

    text = README.read_text()
    between = _between(text, readme_results.HEADLINE_START, readme_results.HEADLINE_END)
    assert between.strip() == readme_results.headline(ROOT / "results").strip()


def test_writing_renders_each_part_whose_markers_a_file_holds(tmp_path):
    """``nar-gap render --write PATH`` fills whichever markers PATH holds,
    leaves the rest of the file alone, and refuses a file with none."""
    from nar_gap.paper.report import readme_results

    results = ROOT / "results"
    page = tmp_path / "page.md"
    page.write_text(
        f"intro\n{readme_results.HEADLINE_START}\nstale\n"
        f"{readme_results.HEADLINE_END}\noutro\n"
    )
    from nar_gap import cli

    assert cli.main(["render", str(results), "--write", str(page)]) == 0
    assert page.read_text() == (
        f"intro\n{readme_results.HEADLINE_START}\n"
        f"{readme_results.headline(results)}\n"
        f"{readme_results.HEADLINE_END}\noutro\n"
    )
    bare = tmp_path / "bare.md"
    bare.write_text("no markers\n")
    with pytest.raises(ValueError, match="markers"):
        readme_results.write_rendered(bare, results)
    assert cli.main(["render", str(results), "--write", str(bare)]) == 2


def test_a_folder_without_results_tables_is_refused_and_the_page_kept(tmp_path, capsys):
    """A mistyped or empty results folder is an error (one line, exit 2),
    not a section of "no ... yet" lines written over the page's own."""
    from nar_gap import cli
    from nar_gap.paper.report import readme_results

    page = tmp_path / "README.md"  # headline markers only: render() never runs
    page.write_text(
        f"intro\n{readme_results.HEADLINE_START}\nkept\n"
        f"{readme_results.HEADLINE_END}\noutro\n"
    )
    before = page.read_text()
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.csv").write_text("a\n1\n")  # a CSV, but no sidecar
    for folder, says in ((tmp_path / "reslts", "no such"), (empty, "no results")):
        capsys.readouterr()
        assert cli.main(["render", str(folder), "--write", str(page)]) == 2
        assert cli.main(["render", str(folder)]) == 2
        err = capsys.readouterr().err
        assert says in err and len(err.strip().splitlines()) == 2, err
        assert page.read_text() == before


def test_rendering_follows_the_files(tmp_path):
    """A changed results file changes the rendered section (the check above can
    fail), and a missing one is named, not invented."""
    import shutil

    from nar_gap.paper.report import readme_results

    results = tmp_path / "results"
    shutil.copytree(README.parent / "results", results)
    before = readme_results.render(results)
    table = results / "table10_baselines.csv"
    table.write_text(table.read_text().replace("bellman_ford", "bellman-ford"))
    assert readme_results.render(results) != before
    (results / "table16_stability_bfs.csv").unlink()
    assert "(no `table16_stability_bfs.csv` yet" in readme_results.render(results)


def test_the_headline_follows_the_files(tmp_path):
    """A changed verdict changes the headline's counts; no files, no table."""
    import shutil

    from nar_gap.paper.report import readme_results
    from nar_gap.system import files

    results = tmp_path / "results"
    shutil.copytree(ROOT / "results", results)
    before = readme_results.headline(results)
    table = results / "paper_vs_ours_01.csv"
    rows = files.read_table(table)
    rows[0]["verdict"] = "disagree"
    files.write_table(table, rows)
    after = readme_results.headline(results)
    assert after != before
    assert "| 01 | cpu | 3 | 2 | 1 | 0 | 0 |" in after
    gpu = results / "gpu" / "paper_vs_ours_02.csv"
    rows = files.read_table(gpu)
    rows[0]["verdict"] = "inconclusive"
    files.write_table(gpu, rows)
    counted = readme_results.headline(results)
    assert "| 02 | gpu | 3 | 1 | 0 | 1 | 1 |" in counted
    assert counted.index("| 02 | cpu |") < counted.index("| 02 | gpu |")
    for path in (results / "gpu").glob("paper_vs_ours_*.csv"):
        path.unlink()
    assert "| gpu |" not in readme_results.headline(results)
    for path in results.glob("paper_vs_ours_*.csv"):
        path.unlink()
    assert "(no `paper_vs_ours_*.csv` yet" in readme_results.headline(results)


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.name)
def test_every_file_a_page_names_exists(page):
    """Paths in backticks (`nar_gap/...py`, `notebooks/...`) must not go stale
    when modules move between layers."""
    named = set(
        re.findall(
            r"`((?:nar_gap|notebooks|benchmarks|scripts)/[\w/.-]+\.(?:py|ipynb|sh))`",
            page.read_text(),
        )
    )
    missing = sorted(p for p in named if not (ROOT / p).is_file())
    assert not missing, f"{page.name} names files that do not exist: {missing}"


def test_the_pages_name_files():
    """The check above reads backticked paths: the pages have some."""
    named = re.findall(
        r"`((?:nar_gap|notebooks|benchmarks|scripts)/[\w/.-]+\.(?:py|ipynb|sh))`",
        "".join(page.read_text() for page in _pages()),
    )
    assert len(named) >= 10, "the pages name no files: the pattern is wrong"


def test_reference_points_end_with_compiled_trained_on(tmp_path):
    """The last reference point is the stability study's compiled model after
    its last step, the mean over data orders (the same graphs and code)."""
    from nar_gap.paper.report import readme_results
    from nar_gap.system.files import write_table

    point = {"point": "compiled", "seeds": 0, "internal": 0.0}
    point |= {"internal_argmax": 0.0, "argmax_agreement": 1.0}
    for algorithm in readme_results.ALGORITHMS:
        write_table(
            tmp_path / f"faithfulness_reference_points_{algorithm}.csv", [point]
        )
        write_table(
            tmp_path / f"stability_{algorithm}.csv",
            [
                {"start": start, "seed": seed, "step": step, "internal": value}
                for start, seed, step, value in (
                    ("compiled", 0, 0, 0.0),
                    ("compiled", 0, 8, 0.2),
                    ("compiled", 1, 8, 0.4),
                    ("random", 0, 8, 0.9),
                    ("compiled, sgd lr 0.001", 0, 8, 0.0),
                )
            ],
        )
    table = readme_results._reference_points(tmp_path)
    assert (
        "compiled, after 8 further Adam steps (notebook 05, 2 data orders) | 0.300"
        in table
    )


# --------------------------------------------------------------------------- #
# No typed-in results: the notebooks' check, applied to the README's prose.
# --------------------------------------------------------------------------- #

RENDERED = re.compile(
    r"<!-- (results|benchmark|headline):start -->.*?<!-- \1:end -->", re.S
)
FENCED = re.compile(r"^```.*?^```", re.M | re.S)
MEASUREMENT_LOG = re.compile(r"^ *<!-- measurement log -->\n(?: *\|.*\n)+", re.M)
INLINE_CODE = re.compile(r"`[^`\n]+`")
VERSION = re.compile(r"\b\d+\.\d+\.\d+\b|\bPython \d+\.\d+\b")
DURATION = re.compile(r"\b\d+(?:\.\d+)? ?(?:ms|s|min)\b")


def _typed_results(text: str) -> list[str]:
    """What the notebooks' `TYPED_RESULT` finds in a page's prose, each
    with the text around it. Exempt, and why:

    - the rendered sections (`<!-- results:... -->`, `<!-- headline:... -->`,
      `<!-- benchmark:... -->`): written from `results/` and
      `benchmarks/results/` by code, and the tests above keep them equal to
      what the renderers make of those files;
    - fenced code blocks: commands, and examples whose printed output is the
      code's (the examples run in `test_every_python_block_...`);
    - inline code spans: code literals (a compiler constant, a threshold that
      the code names, a formula) are settings, not measurements; write a
      setting as code, never a result;
    - version numbers (`jaxlib 0.10.1`, `Python 3.11`): they name software;
    - durations (a number with `s`, `ms` or `min`): run times measure the
      package, not the paper's questions, and the README states the commit
      and the machine of each one where it gives it. No regex can check that
      part; the rule is written beside the reading table's run times;
    - a table right after a `<!-- measurement log -->` line: measurements that
      no results file holds and that the README cites as someone's (the
      reviewer's reruns on another CPU, in "Numbers you can trust"). The
      paragraph before it must say who measured them, where, and against
      which committed file; that paragraph is checked like any prose.

    Nothing else is exempt: the other tables are checked too (the notebooks'
    run-time tables hold durations only).
    """
    from test_notebooks import TYPED_RESULT

    prose = RENDERED.sub("", text)
    prose = FENCED.sub("", prose)
    prose = MEASUREMENT_LOG.sub("", prose)
    prose = INLINE_CODE.sub("``", prose)
    prose = VERSION.sub("<version>", prose)
    prose = DURATION.sub("<duration>", prose)
    return [
        prose[max(0, m.start() - 50) : m.end() + 30].replace("\n", " ")
        for m in TYPED_RESULT.finditer(prose)
    ]


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.name)
def test_no_page_types_a_result_outside_the_rendered_sections(page):
    """A result in a page's prose is a number that no file keeps and no
    rerun updates: point at the table (or the file) instead."""
    found = _typed_results(page.read_text())
    assert not found, f"typed-in results in {page.name}:\n" + "\n".join(found)


def test_the_readme_check_catches_typed_results_and_spares_the_exempt():
    old = "(over 32 seeds: 0.989 after 150 steps, 0.991 after 200)"
    assert _typed_results(old)
    assert _typed_results("BFS reaches ≥ 99 % at N = 64 after about 200 steps")
    assert _typed_results("a random search finds no witness")
    spared = (
        "jaxlib 0.10.2 and Python 3.11; it took 0.41 s; the bar `internal <= 0.05`"
        "\n```\nprint(0.125)\n```\n"
        "<!-- results:start -->\n| bfs | 0.991 |\n<!-- results:end -->\n"
        "<!-- headline:start -->\n| 01 | 3 | 3 |\n<!-- headline:end -->\n"
        "A reviewer measured, on machine M against `results/x.csv`:\n\n"
        "  <!-- measurement log -->\n  | x | 0.634 |\n  |---|---|\n\n"
    )
    assert _typed_results(spared) == []
    assert _typed_results("<!-- measurement log -->\n| x | 1 |\n\nthen 0.634")


def test_table1_is_rendered_under_each_selection_rule(tmp_path):
    """Table 1's rows under CLRS's rule, the partial correlation and the
    final-step parameters, side by side."""
    from nar_gap.paper.report import readme_results
    from nar_gap.system import files

    for algorithm in readme_results.ALGORITHMS:
        files.write_table(
            tmp_path / f"table1_correlations_{algorithm}.csv",
            [
                {
                    "selection": selection,
                    "measure": measure,
                    "n": 32,
                    "pearson_r": r,
                    "pearson_ci_low": r - 0.1,
                    "pearson_ci_high": r + 0.1,
                }
                for selection, r in (
                    ("first_best", -0.6),
                    ("first_best_partial", -0.05),
                    ("final", -0.2),
                )
                for measure in ("internal", "external")
            ],
        )
    table = readme_results._table1(tmp_path)
    assert (
        "| bfs | internal | 32 | -0.600 [-0.700, -0.500] | -0.050 [-0.150, 0.050] |"
        in table
    )
    assert "| bfs | external_pre_output |" in table


# --------------------------------------------------------------------------- #
# The README is a landing page; the reference is docs/, every page in the nav.
# --------------------------------------------------------------------------- #


def _nav_pages() -> list[str]:
    """The pages mkdocs.yml's nav lists, in its order (nested sections too)."""
    import yaml

    def walk(entry) -> list[str]:
        if isinstance(entry, str):
            return [entry]
        if isinstance(entry, list):
            return [page for item in entry for page in walk(item)]
        return [page for value in entry.values() for page in walk(value)]

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    return walk(config["nav"])


def test_the_readme_is_short_and_links_every_docs_page():
    text = README.read_text()
    assert len(text.splitlines()) < README_LINES, (
        f"README.md has {len(text.splitlines())} lines; move reference to docs/"
    )
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)(?:#[\w-]*)?\)", text))
    pages = {page.name for page in DOCS.glob("*.md")}
    assert pages <= linked, f"README.md links no {sorted(pages - linked)}"


def test_every_docs_page_is_in_the_nav_and_every_nav_page_exists():
    nav = _nav_pages()
    pages = {page.name for page in DOCS.glob("*.md")}
    assert len(nav) == len(set(nav)), f"a page twice in the nav: {nav}"
    assert set(nav) == pages, (
        f"not in mkdocs.yml's nav: {sorted(pages - set(nav))}; "
        f"in the nav but not in docs/: {sorted(set(nav) - pages)}"
    )


def _anchors(text: str) -> set[str]:
    """The anchors of a page's headings (fenced code left out), as GitHub and
    MkDocs spell them for ASCII headings."""
    prose = FENCED.sub("", text)
    return {
        re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", heading.replace("`", "")))
        .strip("-")
        .lower()
        for heading in re.findall(r"^#{1,6} (.*)$", prose, re.M)
    }


def test_every_link_of_the_readme_reaches_its_page_and_anchor():
    """MkDocs checks the links between docs pages; the README is not one of
    them, so its links (`docs/page.md#anchor`, `#anchor`) are checked here."""
    text = README.read_text()
    broken = []
    for target, anchor in re.findall(r"\]\(([\w./-]*)#([\w-]+)\)", text):
        page = ROOT / target if target else README
        if not page.is_file() or anchor not in _anchors(page.read_text()):
            broken.append(f"{target}#{anchor}")
    for target in re.findall(r"\]\(([\w./-]+)\)", text):
        if not (ROOT / target).exists():
            broken.append(target)
    assert not broken, f"README.md links what is not there: {broken}"
