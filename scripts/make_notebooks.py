"""Write notebooks/NN_*.ipynb from the cell lists below (outputs stripped).

The notebooks are the teaching walkthrough and papermill's entry points; their
text lives here so a change is reviewed as a diff of Python, and the
committed ``.ipynb`` files are regenerated with

    .venv/bin/python scripts/make_notebooks.py

(tests/test_notebooks.py fails if the committed notebooks differ from this).
Every notebook starts with a ``parameters`` cell of literals; the code cells
only call ``nar_gap`` and display what it wrote.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent

# Empty folders mean the profile's own (nar_gap.profiles.output_dirs): the
# committed results/ and figures/ for cpu, build/<profile>/ for the others, and
# build/runs/<profile> for training runs, where ./run_all.sh keeps them, so a
# notebook opened in JupyterLab after it reuses them.
COMMON_PARAMETERS = '''PROFILE = "cpu"  # smoke, cpu or paper
RUNS_DIR = ""  # "": build/runs/<profile>
RESULTS_DIR = ""  # "": results/ for cpu, build/<profile>/results otherwise
FIGURES_DIR = ""  # "": figures/ for cpu, build/<profile>/figures otherwise'''

SETUP = """from IPython.display import Image, display

import nar_gap  # first: puts any XLA workaround in force before JAX starts
from nar_gap import io, pipeline, profiles

print(nar_gap.check_backend().message)  # stops here if this JAX computes wrong numbers
profile = profiles.get(PROFILE)
dirs = profiles.output_dirs(PROFILE, RUNS_DIR, RESULTS_DIR, FIGURES_DIR)
runs, results, figures = dirs.runs, dirs.results, dirs.figures
print(profile)
print(f"runs in {runs}, tables in {results}, figures in {figures}")"""

SHOW = '''def show_table(name):
    """Display a results CSV as a table (pandas-free: the CSV's rows)."""
    import html

    rows = io.read_table(results / name)
    head = "".join(f"<th>{html.escape(k)}</th>" for k in rows[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in r.values()) + "</tr>"
        for r in rows
    )
    from IPython.display import HTML

    display(HTML(f"<table><tr>{head}</tr>{body}</table>"))


def show_figure(stem):
    display(Image(filename=str(figures / f"{stem}.png")))'''


NOTEBOOKS: dict[str, list[tuple[str, str]]] = {
    "01_compile": [
        (
            "md",
            """# 01 · Neural compilation: BFS and Bellman-Ford written into GATv2 weights

This notebook is the walkthrough of Section 3.3 and Appendix C of *Mind the Gap*.
A **graph program** names the variables a GATv2 keeps in its hidden state and
says how, at every step, each node *selects* one neighbour through attention.
nar_gap's compiler turns such a program into the weights of the same Flax
network that we train, and we check the result against dm-clrs's own
reference algorithm on every hint of every step.""",
        ),
        ("parameters", COMMON_PARAMETERS + '\nALGORITHMS = ["bfs", "bellman_ford"]'),
        ("code", SETUP),
        ("code", SHOW),
        (
            "md",
            """## The BFS program

Three hidden variables: `reached_not_source` and the predecessor id held in two
channels. A node selects, in order of priority, a *reached* sender, then the
*lowest id* among them (CLRS scans nodes in id order), and otherwise itself, so
it keeps its state through the skip path.""",
        ),
        (
            "code",
            """bfs = nar_gap.compile("bfs", hidden_size=None)  # the smallest size it fits
display(bfs.program)  # variables, selection criteria, updates, decoders
display(bfs.layout)  # which dimension of each space holds what""",
        ),
        (
            "md",
            """## The compiled weights (the paper's Figures 6–7)

Every row and column is labelled with the variable it holds. The colour scale
is symmetric-logarithmic: the eligibility constants (~1e7) and the leak
corrections (~1e-2) appear side by side.""",
        ),
        (
            "code",
            """written = pipeline.compiled_figures(ALGORITHMS, figures)
for path in written:
    if path.suffix == ".png" and "weights" in path.name:
        display(Image(filename=str(path)))""",
        ),
        (
            "md",
            """## One small graph, step by step

A 6-node graph; the attention matrix of each step has receivers as rows and
senders as columns. Each receiver puts all its weight on one sender: the
neighbour it takes its new state from.""",
        ),
        (
            "code",
            """import numpy as np

A = pipeline.example_graph()
res = bfs.run(A, source=0)
print("pi        ", res.outputs["pi"])
print("reach_h   ", res.hints["reach_h"].astype(int).tolist())
print("mismatches", res.mismatches)
show_figure("fig_compiled_bfs_attention")""",
        ),
        (
            "md",
            """## Exactness against dm-clrs

The compiled networks are run on sampled CLRS graphs far larger than any they
were first checked on, and every hint and output is compared with dm-clrs's
trace (pointers and masks exactly, distances within 1e-4).""",
        ),
        (
            "code",
            """rows = pipeline.exactness_table(profile, ALGORITHMS, results)
show_table("compiled_exactness.csv")""",
        ),
        (
            "md",
            """## Bellman-Ford

Bellman-Ford needs the paper's *edge information*: the selected value carries
`d_u + A_uv`, so a node selects the reached neighbour with the smallest path
length and keeps its predecessor unless the new distance is strictly better.""",
        ),
        (
            "code",
            """bf = nar_gap.compile("bellman_ford", hidden_size=None)
print("hidden size", bf.layout.hidden_size, "flags:",
      {k: getattr(bf.config, k) for k in ("use_edge_info", "use_pre_att_bias", "use_ln")})
W = A * np.linspace(0.2, 1.0, 36).reshape(6, 6)
W = np.triu(W) + np.triu(W).T
res = bf.run(W, source=0)
print("pi", res.outputs["pi"], "d", np.round(res.hints["d"][-1], 3))
print("mismatches", res.mismatches)""",
        ),
    ],
    "02_baselines": [
        (
            "md",
            """# 02 · Baselines: BFS, DFS and Bellman-Ford trained over seeds (Table 9)

The CLRS GATv2 trained the benchmark's way (Adam 1e-3, clipping, sizes 4–16,
soft hint feedback), every seed as one vmapped computation. Scores are CLRS's
output score (`pi` accuracy) on the test graphs, reported as the paper does:
mean ± standard deviation (maximum) over seeds. The profile sets the sizes;
`paper` is the paper's (128 seeds, 10 000 steps, hidden 128).""",
        ),
        (
            "parameters",
            COMMON_PARAMETERS + '\nALGORITHMS = ["bfs", "dfs", "bellman_ford"]',
        ),
        ("code", SETUP),
        ("code", SHOW),
        (
            "code",
            """rows = pipeline.baselines(profile, runs, results, ALGORITHMS)
show_table("table9_baselines.csv")""",
        ),
        (
            "md",
            """BFS, the algorithm GATv2 is best aligned with, is learned best; DFS,
inherently sequential, worst. The runs stay in `runs` and are reused by
the next notebooks.""",
        ),
    ],
    "03_faithfulness": [
        (
            "md",
            """# 03 · Faithfulness: how far are trained models from the compiled one? (Section 4)

*External* faithfulness (Eq. 25) asks whether a model's intermediate trace is
right; *internal* faithfulness (Eq. 24) compares its attention, step by step,
with the compiled network's on the same graphs (0 = identical, 1 = disjoint).
Both are computed for every seed of notebook 02, then correlated with accuracy
(Table 1) and used to cluster the learned solutions (Figure 5).""",
        ),
        ("parameters", COMMON_PARAMETERS + '\nALGORITHMS = ["bfs", "bellman_ford"]'),
        ("code", SETUP),
        ("code", SHOW),
        (
            "code",
            """reports = {
    algorithm: pipeline.faithfulness(profile, algorithm, runs, results, figures)
    for algorithm in ALGORITHMS
}
for algorithm in ALGORITHMS:
    show_table(f"faithfulness_summary_{algorithm}.csv")""",
        ),
        (
            "md",
            """## Table 1: does faithfulness track accuracy?

Pearson and Spearman correlations of each measure with test accuracy across
seeds. The paper finds none for BFS (r = −0.055 internal, −0.124 external).""",
        ),
        (
            "code",
            """for algorithm in ALGORITHMS:
    show_table(f"table1_correlations_{algorithm}.csv")
    show_figure(f"fig1_{algorithm}_internal_vs_accuracy")
    show_figure(f"fig10_{algorithm}_external_vs_accuracy")""",
        ),
        (
            "md",
            """## Figures 2–3: internal distance over time, and the closest seed

Even the seed closest to the compiled model attends elsewhere after the first
steps.""",
        ),
        (
            "code",
            """for algorithm in ALGORITHMS:
    show_figure(f"fig2_{algorithm}_internal_over_time")
    show_figure(f"fig3_{algorithm}_closest_attention")""",
        ),
        ("md", """## Figures 4 and 11: trace predictions degrade over time"""),
        (
            "code",
            """for algorithm in ALGORITHMS:
    show_figure(f"fig11_{algorithm}_trace_over_time")
    show_figure(f"fig4_{algorithm}_trace_uniform_time")""",
        ),
        (
            "md",
            """## Figure 5: clusters of learned solutions

Pairwise internal distances between seeds, Ward linkage, and the number of
clusters read at the widest gap between merge heights.""",
        ),
        (
            "code",
            """for algorithm in ALGORITHMS:
    show_figure(f"fig5_{algorithm}_solution_clusters")
    show_table(f"faithfulness_{algorithm}.csv")""",
        ),
    ],
    "04_ablations": [
        (
            "md",
            """# 04 · Ablations (Appendix D: Tables 11–15, D.1, D.10)

Each table is one set of training configurations differing in one thing: edge
information, the pre-attention bias, hints, sequential variants, minimal
(hidden 4) models over many seeds, L1 regularisation and extended training.
Every cell is mean ± std (max) of the test score over seeds. Identical
configurations share one run (e.g. Table 14's BFS with hints is notebook 02's
BFS baseline).""",
        ),
        (
            "parameters",
            COMMON_PARAMETERS
            + '\nABLATIONS = ["table11_edge_info", "table12_pre_att_bias", "table13_length_limited", "table14_no_hints", "d10_sequential", "table15_minimal", "d1_regularisation"]',
        ),
        ("code", SETUP),
        ("code", SHOW),
        (
            "code",
            """tables = pipeline.ablation_tables(profile, runs, results, ABLATIONS)
for name in tables:
    print(name)
    show_table(f"{name}.csv")""",
        ),
        (
            "md",
            """The paper: edge information raises Bellman-Ford's mean and lowers its
spread (Table 11); the bias changes little for BFS at N = 16 (Table 12); the
modifications matter most for minimal models (Table 15).""",
        ),
    ],
    "05_stability": [
        (
            "md",
            """# 05 · Stability of compiled minima (Appendix D.8, Table 16)

Start every seed at the compiled parameters and keep training with Adam; the
seeds differ only in the order of their data. Along the way we measure test
accuracy, the internal distance to the compiled attention and how far the
parameters moved. The same architecture trained from random initialisation
is the comparison row.""",
        ),
        ("parameters", COMMON_PARAMETERS + '\nALGORITHMS = ["bfs", "bellman_ford"]'),
        ("code", SETUP),
        ("code", SHOW),
        (
            "code",
            """for algorithm in ALGORITHMS:
    pipeline.stability_study(profile, algorithm, runs, results, figures)
    show_table(f"table16_stability_{algorithm}.csv")
    show_figure(f"fig_stability_{algorithm}")""",
        ),
        (
            "md",
            """The compiled solution is exact at step 0; a few Adam steps move it off
its sharp minimum, by an amount that depends on the data order.""",
        ),
    ],
    "06_loss_landscapes": [
        (
            "md",
            """# 06 · Loss landscapes (Appendix D.11)

The training loss on a plane through three points: the compiled parameters, a
learned solution (the best baseline seed) and that seed's initialisation. The
two directions are random and *filter-normalised* (Li et al., 2018), so every
landscape is drawn in units of its own weights. Sharpness is the mean loss
rise on a circle of radius 0.1 and 0.5.""",
        ),
        ("parameters", COMMON_PARAMETERS + '\nALGORITHMS = ["bfs", "bellman_ford"]'),
        ("code", SETUP),
        ("code", SHOW),
        (
            "code",
            """for algorithm in ALGORITHMS:
    pipeline.landscapes(profile, algorithm, runs, results, figures)
    show_table(f"landscape_{algorithm}.csv")
    for centre in ("compiled", "learned", "initial"):
        show_figure(f"fig_landscape_{algorithm}_{centre}")""",
        ),
        (
            "md",
            """Compiled minima are exact but sharp: the loss rises by orders of
magnitude within a fraction of a filter's norm, where the learned minimum is
flat (the paper's Figure 17).""",
        ),
    ],
}


def build(name: str, cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    """One notebook: markdown, the tagged parameters cell, code cells; no outputs."""
    notebook = nbformat.v4.new_notebook()
    notebook.metadata = {
        "kernelspec": {
            "display_name": "Python (nar_gap)",
            "language": "python",
            "name": "nar-gap",
        },
        "language_info": {"name": "python"},
    }
    for index, (kind, text) in enumerate(cells):
        cell_id = f"{name[:2]}-{index:02d}"
        if kind == "md":
            cell = nbformat.v4.new_markdown_cell(text)
        else:
            cell = nbformat.v4.new_code_cell(text)
            if kind == "parameters":
                cell.metadata["tags"] = ["parameters"]
        cell["id"] = cell_id
        notebook.cells.append(cell)
    return notebook


def render(name: str) -> str:
    """The exact text of notebook ``name`` as committed."""
    return nbformat.writes(build(name, NOTEBOOKS[name])) + "\n"


def main() -> int:
    out = ROOT / "notebooks"
    out.mkdir(exist_ok=True)
    for name in NOTEBOOKS:
        (out / f"{name}.ipynb").write_text(render(name), encoding="utf-8")
        print(f"wrote notebooks/{name}.ipynb")
    return 0


if __name__ == "__main__":
    sys.exit(main())
