"""The paper's claims that our results files can test: the data.

One :class:`Claim` per finding a notebook discusses: the notebook whose
results it reads, where the paper makes it, the paper's words and numbers
(typed here once, from the paper's text), and the rule of
:mod:`~nar_gap.paper.report.rules` that judges it with its parameters.
Adding a claim is adding a row here; a new kind of check is a new rule.

The paper's extracted text lost most table values; the numbers below are the
ones it kept (Table 1, the 87 % of §1, the 18 clusters of §4.5, the hidden
size 4 of §3.3, the 500 parameters of D.7).

Each claim sits under the notebook that writes the file it reads: 04 for the
ablation tables (Tables 11-13, 15 and 17), 03 for §4.3-§4.6.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from nar_gap.paper.experiments import ablations
from nar_gap.paper.report import rules
from nar_gap.paper.report.rules import Verdict


@dataclasses.dataclass(frozen=True)
class Claim:
    """One finding of the paper and the rule that checks it against our results.

    ``rule``: a function of :mod:`~nar_gap.paper.report.rules`, called with
    the results folder and ``params``.
    ``notebook``: the notebook that writes the results the rule reads.
    ``trained``: whose profile sizes its models train at (an algorithm's
    baseline sizes, ``"ablation"`` for the profile's common ones,
    ``"minimal"`` for Table 15's hidden-4 seeds; None for rows with no
    trained seeds): what ``decidable_at`` sizes from.
    ``profile``: the smallest profile whose run of ``notebook`` writes the
    rows the rule reads, where the default ``cpu`` run leaves them out (the
    arms in the authors' forms: ``studies``); None: every profile's.
    """

    notebook: str
    where: str
    claim: str
    paper: str
    rule: Callable[..., Verdict]
    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    trained: str | None = None
    profile: str | None = None


BFS_CORRELATION = "Pearson -0.055 (p 0.569), Spearman -0.018 (p 0.856)"
BFS_EXTERNAL = "Pearson -0.124 (p 0.203), Spearman -0.130 (p 0.178)"

CLAIMS: tuple[Claim, ...] = (
    Claim(
        "01",
        "§3.3, App. C",
        "BFS and Bellman-Ford compile into GATv2 and execute exactly",
        "exact",
        rules.compiled_exact,
    ),
    Claim(
        "01",
        "§3.3",
        "compiled Bellman-Ford runs in a minimal model of hidden size 4",
        "hidden 4",
        rules.smallest_hidden,
        {"algorithm": "bellman_ford", "at_most": 4},
    ),
    Claim(
        "01",
        "App. D.7",
        "a 500-parameter GAT can express BFS or Bellman-Ford",
        "about 500 parameters",
        rules.smallest_parameters,
        {"at_most": 500},
    ),
    Claim(
        "02",
        "§2, abstract, Table 10",
        "trained BFS is nearly perfect",
        "“nearly perfect” (§2), “near-perfect accuracy” (abstract)",
        rules.baseline_at_least,
        {"algorithm": "bfs", "threshold": 0.99},
        trained="bfs",
    ),
    Claim(
        "02",
        "§1",
        "trained Bellman-Ford predicts shortest paths with 87 % accuracy",
        "87 %",
        rules.baseline_near,
        {"algorithm": "bellman_ford", "target": 0.87},
        trained="bellman_ford",
    ),
    Claim(
        "02",
        "§2 (Related Work)",
        "trained DFS struggles significantly",
        "struggles significantly",
        rules.dfs_struggles,
        trained="dfs",
    ),
    Claim(
        "03",
        "Table 1",
        "internal faithfulness does not correlate with accuracy (BFS)",
        BFS_CORRELATION,
        rules.no_correlation,
        {"algorithm": "bfs", "measure": "internal"},
        trained="bfs",
    ),
    Claim(
        "03",
        "Table 1",
        "external faithfulness does not correlate with accuracy (BFS)",
        BFS_EXTERNAL,
        rules.no_correlation,
        {"algorithm": "bfs", "measure": "external"},
        trained="bfs",
    ),
    Claim(
        "03",
        "Table 1 (ours: Eq. 25 before the output step)",
        "external faithfulness before the output step does not correlate with "
        "accuracy (BFS)",
        f"Eq. 25 over all steps: {BFS_EXTERNAL}",
        rules.no_correlation,
        {"algorithm": "bfs", "measure": "external_pre_output"},
        trained="bfs",
    ),
    Claim(
        "03",
        "§4.5",
        "none of the learned BFS solutions behaves like the compiled one",
        "none of 128 seeds",
        rules.none_close,
        {"algorithm": "bfs"},
        trained="bfs",
    ),
    Claim(
        "03",
        "§4.5",
        "learned BFS solutions are closer to each other than any is to compiled",
        "inter-solution differences smaller than the closest distance to compiled",
        rules.inter_solution,
        {"algorithm": "bfs"},
        trained="bfs",
    ),
    Claim(
        "03",
        "§4.3, Figure 2",
        "BFS attention is slightly closer in the first two steps, then deviates",
        "closer at steps 0-1",
        rules.early_steps_closer,
        {"algorithm": "bfs"},
        trained="bfs",
    ),
    Claim(
        "03",
        "§4.4, Figure 4",
        "BFS trace predictions degrade over time",
        "degrade along the uniform timescale",
        rules.traces_degrade,
        {"algorithm": "bfs"},
        trained="bfs",
    ),
    Claim(
        "03",
        "§4.3, Figure 2 (ours: long traces)",
        "BFS attention is slightly closer in the first two steps, then deviates "
        "(on graphs with tens of steps)",
        "closer at steps 0-1",
        rules.early_steps_closer,
        {"algorithm": "bfs", "prefix": rules.LONG},
        trained="bfs",
    ),
    Claim(
        "03",
        "§4.4, Figure 4 (ours: long traces)",
        "BFS trace predictions degrade over time (on graphs with tens of steps)",
        "degrade along the uniform timescale",
        rules.traces_degrade,
        {"algorithm": "bfs", "prefix": rules.LONG},
        trained="bfs",
    ),
    Claim(
        "03",
        "Table 1 (ours: long traces)",
        "external faithfulness before the output step does not correlate with "
        "accuracy (BFS, on graphs with tens of steps)",
        f"Eq. 25 over all steps: {BFS_EXTERNAL}",
        rules.no_correlation_long,
        {"algorithm": "bfs", "measure": "external_pre_output"},
        trained="bfs",
    ),
    Claim(
        "03",
        "§4.5, Figure 5",
        "the learned BFS solutions form consistent clusters",
        "18 clusters of 128 seeds",
        rules.clusters,
        {"algorithm": "bfs"},
        trained="bfs",
    ),
    Claim(
        "03",
        "§4.6",
        "trained models have not converged to predict traces even on the training set",
        "not converged on the training set",
        rules.training_traces,
        {"algorithm": "bfs"},
        trained="bfs",
    ),
    Claim(  # the paper's claim is about its models, not BFS's alone
        "03",
        "§4.6 (ours: Bellman-Ford)",
        "trained Bellman-Ford has not converged to predict traces even on the "
        "training set",
        "not converged on the training set",
        rules.training_traces,
        {"algorithm": "bellman_ford"},
        trained="bellman_ford",
    ),
    Claim(
        "03",
        "§4.6, D.4",
        "edge information brings trained Bellman-Ford closer to the compiled one "
        "(like for like: the compiled network uses edge information)",
        "modified (edge info) closer than default",
        rules.edge_info_closer,
        {"algorithm": "bellman_ford"},
        trained="bellman_ford",
    ),
    Claim(
        "04",
        "§4.6, D.4, Table 11",
        "edge information partially closes Bellman-Ford's gap",
        "modified (edge info) above default",
        rules.higher,
        {
            "table": ablations.table_file(ablations.EDGE_INFO_TABLE),
            "claimed": "edge information",
            "other": "no edge information",
        },
        trained="ablation",
    ),
    Claim(
        "04",
        "§4.6, D.4, Table 11 (the fork's definitions, at training size 16)",
        "edge information (the authors' learned form) partially closes "
        "Bellman-Ford's gap",
        "modified (edge info) above default",
        rules.higher,
        {
            "table": ablations.table_file(ablations.EDGE_INFO_TABLE),
            "claimed": ablations.FORK_EDGE_INFO_ARM,
            "other": ablations.FORK_EDGE_INFO_CONTROL,
        },
        trained="ablation",
        profile="studies",
    ),
    Claim(
        "04",
        "D.4, Table 12",
        "a pre-attention bias makes no significant difference to BFS",
        "no significant differences (tested on length 16)",
        rules.paired_bias_arms,
        {
            "name": ablations.PRE_ATT_BIAS_TABLE,
            "bias_arm": "pre-attention bias",
            "control": "no bias",
            "rule_name": "no difference",
        },
        trained="ablation",
    ),
    Claim(
        "04",
        "D.4, Table 13",
        "length-limited Bellman-Ford with both modifications is as capable as without",
        "“still as-capable as the unmodified version within distribution”",
        rules.not_worse,
        {
            "table": ablations.table_file(ablations.LENGTH_LIMITED_TABLE),
            "modified": "edge information + bias",
            "unmodified": "unmodified",
        },
        trained="ablation",
    ),
    Claim(
        "04",
        "D.4, Table 13 (the fork's definitions, at training size 16)",
        "length-limited Bellman-Ford with the authors' modifications and "
        "simplified decoder is as capable as without the modifications",
        "“still as-capable as the unmodified version within distribution”",
        rules.not_worse,
        {
            "table": ablations.table_file(ablations.LENGTH_LIMITED_TABLE),
            "modified": ablations.FORK_BOTH_ARM,
            "unmodified": ablations.FORK_DECODER_CONTROL,
        },
        trained="ablation",
        profile="studies",
    ),
    Claim(
        "04",
        "D.7, Table 15",
        "the architecture modifications help minimal BFS models",
        "modifications have a stronger effect on minimal models",
        rules.paired_bias_arms,
        {
            "name": ablations.MINIMAL_TABLE,
            "bias_arm": "bfs + bias",
            "control": "bfs",
            "rule_name": "higher",
        },
        trained="minimal",
    ),
    Claim(
        "04",
        "D.7, Table 15",
        "the architecture modifications help minimal Bellman-Ford models",
        "modifications have a stronger effect on minimal models",
        rules.paired_higher,
        {
            "name": ablations.MINIMAL_TABLE,
            "claimed": "bellman_ford + edge information + bias",
            "other": "bellman_ford",
        },
        trained="minimal",
    ),
    Claim(
        "04",
        "D.10, Table 17",
        "sequential-trace BFS is still significantly more trainable than "
        "simplified DFS",
        "BFS still significantly more trainable than DFS",
        rules.higher,
        {
            "table": ablations.table_file(ablations.SEQUENTIAL_TABLE),
            "claimed": "bfs_seq",
            "other": "dfs_light",
        },
        trained="ablation",
    ),
    Claim(
        "05",
        "D.8, Table 16",
        "compiled BFS sits in an unstable minimum: training on loses accuracy",
        "unstable when further trained",
        rules.compiled_unstable,
        {"algorithm": "bfs"},
    ),
    Claim(
        "05",
        "D.8, Table 16",
        "compiled Bellman-Ford sits in an unstable minimum",
        "unstable when further trained",
        rules.compiled_unstable,
        {"algorithm": "bellman_ford"},
    ),
    Claim(
        "06",
        "D.11",
        "compiled BFS is a sharp minimum, the learned one flat",
        "sharp against flat",
        rules.compiled_sharper,
        {"algorithm": "bfs"},
    ),
    Claim(
        "06",
        "D.11",
        "compiled Bellman-Ford is a sharp minimum, the learned one flat",
        "sharp against flat",
        rules.compiled_sharper,
        {"algorithm": "bellman_ford"},
    ),
    Claim(
        "08",
        "TransNAR (Bounsi et al. 2024), CLRS-Text results",
        "BFS: the Transformer alone fails out of distribution",
        "the Transformer's CLRS score falls beyond its training sizes",
        rules.transformer_fails_ood,
        {"algorithm": "bfs"},
    ),
    Claim(
        "08",
        "TransNAR (Bounsi et al. 2024), CLRS-Text results",
        "Bellman-Ford: the Transformer alone fails out of distribution",
        "the Transformer's CLRS score falls beyond its training sizes",
        rules.transformer_fails_ood,
        {"algorithm": "bellman_ford"},
    ),
    Claim(
        "08",
        "TransNAR (Bounsi et al. 2024), CLRS-Text results",
        "BFS: TransNAR (a trained NAR) holds up better out of distribution",
        "TransNAR's CLRS score above the Transformer's out of distribution",
        rules.hybrid_holds_up,
        {"algorithm": "bfs", "model": "transnar_trained"},
    ),
    Claim(
        "08",
        "TransNAR (Bounsi et al. 2024), CLRS-Text results",
        "Bellman-Ford: TransNAR (a trained NAR) holds up better out of distribution",
        "TransNAR's CLRS score above the Transformer's out of distribution",
        rules.hybrid_holds_up,
        {"algorithm": "bellman_ford", "model": "transnar_trained"},
    ),
)
