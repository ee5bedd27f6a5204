"""What a node can see: the locality lemma, its witnesses, and CLRS's way around it.

Issue 19 asks whether CLRS's GATv2 can execute DFS.  These tests pin down
the first half of the answer: no graph program (the language as it stands,
one GATv2 step per hint step or any number of them) can, because an isolated
node's DFS trace depends on the rest of the graph; and CLRS's network is not
bound by that argument, because its decoded hints are fed back.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from nar_gap.model import encoders
from nar_gap.model.config import NetworkConfig
from nar_gap.model.network import init_params
from nar_gap.model.seeds import forward
from nar_gap.programs.interpreter import run_program
from nar_gap.programs.locality import (
    argmax_hints,
    feedback_views,
    find_argmax_witness,
    find_witness,
    graphs,
    reach,
    view,
)
from nar_gap.programs.registry import get_program
from nar_gap.tasks.graphs import batch_from_graph


def _path(n: int) -> np.ndarray:
    a = np.zeros((n, n))
    for u in range(n - 1):
        a[u, u + 1] = a[u + 1, u] = 1
    return a


def test_reach_grows_one_hop_per_radius_along_either_direction():
    a = np.zeros((5, 5))
    a[0, 1] = a[2, 1] = a[3, 4] = 1  # directed: 0 -> 1 <- 2, and 3 -> 4
    assert list(reach(a, 0, 0)) == [0]
    assert list(reach(a, 0, 1)) == [0, 1]
    assert list(reach(a, 0, 2)) == [0, 1, 2]
    assert list(reach(a, 0, 10)) == [0, 1, 2]
    assert list(reach(a, 4, 1)) == [3, 4]


def test_the_enumeration_gives_every_graph_once():
    directed = list(graphs("dfs", 3))
    assert len(directed) == 2**6
    assert len({g.tobytes() for g in directed}) == 2**6
    symmetric = list(graphs("bfs", 3, self_loops=True))
    assert len(symmetric) == 2**6
    assert all(np.array_equal(g, g.T) for g in symmetric)
    with pytest.raises(ValueError, match="more than the exhaustive search"):
        next(graphs("dfs", 5, self_loops=True))


def _check_witness(witness) -> None:
    """The witness is what it says, recomputed from dm-clrs without the search."""
    batches = [
        batch_from_graph(witness.algorithm, g, s)
        for g, s in zip(witness.graphs, witness.sources, strict=True)
    ]
    views = [view(b, witness.node, witness.radius) for b in batches]
    assert views[0] == views[1]
    values = [
        np.asarray(b.hints[witness.probe][witness.hint, 0, witness.node]).tolist()
        for b in batches
    ]
    assert values[0] != values[1]
    assert tuple(values) == witness.values


@pytest.mark.parametrize("algorithm", ["dfs", "dfs_light"])
def test_dfs_depends_on_nodes_that_no_number_of_steps_reaches(algorithm):
    """An isolated node's turn as a root depends on the rest of the graph."""
    witness = find_witness(algorithm, 3, steps_per_hint=None)
    assert witness is not None
    _check_witness(witness)
    assert witness.every_radius
    # The node sees nothing but itself in one of the graphs at least, so
    # its view is its own inputs: the same in both, at every radius.
    assert any(
        list(reach(g, witness.node, 3)) == [witness.node] for g in witness.graphs
    )
    assert f"node {witness.node}" in str(witness)


def test_sequential_bfs_needs_more_than_one_step_per_hint():
    """bfs_seq (D.10) updates one pointer per step, in scan order."""
    witness = find_witness("bfs_seq", 3)
    assert witness is not None
    _check_witness(witness)


@pytest.mark.parametrize("algorithm", ["bfs", "bellman_ford"])
@pytest.mark.parametrize("num_nodes,self_loops", [(3, True), (4, False)])
def test_bfs_and_bellman_ford_decide_every_hint_within_reach(
    algorithm, num_nodes, self_loops
):
    """The negative control: the compiled algorithms have no witness."""
    assert find_witness(algorithm, num_nodes, self_loops) is None


def test_dfs_light_is_beyond_every_exact_network_that_feeds_its_hints_back_hard():
    """dfs_light's hints (pi_h, color) never tell an isolated node its turn.

    The witness's node has no edge in either graph, so it holds at every
    number of message-passing steps; ``color`` is decoded from that node alone.
    """
    witness = find_witness("dfs_light", 3, True, steps_per_hint=1, feedback=True)
    assert witness is not None and witness.feedback and witness.isolated
    assert witness.probe == "color"
    _check_witness(witness)
    interned: dict = {}  # shared: equal integers are equal views
    views = [
        feedback_views(batch_from_graph("dfs_light", g), 1, interned)
        for g in witness.graphs
    ]
    at = (witness.hint - 1, witness.node)
    assert views[0][at] == views[1][at]


@pytest.mark.parametrize("algorithm", ["bfs", "bellman_ford", "bfs_seq", "dfs"])
def test_with_the_exact_hints_fed_back_the_other_algorithms_have_no_witness(
    algorithm,
):
    """DFS's cursors (s, u, v, s_last) carry its global choices to every node.

    Also the negative control of the feedback views: a view that forgot the
    neighbours' hints found a false witness for BFS.
    """
    assert find_witness(algorithm, 3, True, steps_per_hint=1, feedback=True) is None


@pytest.mark.slow
@pytest.mark.parametrize(
    "num_nodes,samples,p", [(4, None, 0.5), (6, 2000, 0.2), (8, 600, 0.15)]
)
def test_dfs_with_its_hints_fed_back_has_no_witness_on_larger_graphs(
    num_nodes, samples, p
):
    """Every 4-node graph, and samples of sparse 6- and 8-node graphs."""
    witness = find_witness(
        "dfs",
        num_nodes,
        steps_per_hint=1,
        feedback=True,
        samples=samples,
        edge_probability=p,
    )
    assert witness is None, str(witness)


def test_feedback_views_need_a_number_of_steps():
    with pytest.raises(ValueError, match="number of steps"):
        find_witness("dfs", 3, steps_per_hint=None, feedback=True)
    with pytest.raises(ValueError, match=">= 1"):
        find_witness("dfs", 3, steps_per_hint=0)


def _far_change(a: np.ndarray, node: int, radius: int, rng) -> np.ndarray:
    """``a`` with every pair outside ``node``'s radius-``radius`` reach redrawn."""
    outside = np.setdiff1d(np.arange(len(a)), reach(a, node, radius))
    changed = a.copy()
    for u in outside:
        for v in outside:
            if u < v:
                changed[u, v] = changed[v, u] = rng.integers(0, 2) * rng.uniform(
                    0.1, 1.0
                )
    return changed


@pytest.mark.parametrize("name", ["bfs", "bellman_ford"])
def test_the_interpreter_sees_no_further_than_one_hop_per_step(name):
    """The lemma itself: redrawing the graph beyond k hops leaves step k alone.

    Checked on the interpreter, which defines what a graph program means, for
    both programs, random graphs, every node and every radius.
    """
    rng = np.random.default_rng(0)
    program = get_program(name)
    checked = 0
    for _ in range(6):
        n = 9
        a = np.triu(rng.random((n, n)) < 0.3, 1) * rng.uniform(0.1, 1.0, (n, n))
        a = a + a.T
        if name == "bfs":
            a = (a != 0).astype(float)
        source = int(rng.integers(n))
        first = batch_from_graph(name, a, source, float_dtype=np.float64)
        steps = int(first.lengths[0]) - 1
        for node in range(n):
            for k in range(1, steps + 1):
                if source not in reach(a, node, k):
                    continue
                far = _far_change(a, node, k, rng)
                if name == "bfs":
                    far = (far != 0).astype(float)
                second = batch_from_graph(name, far, source, float_dtype=np.float64)
                assert view(first, node, k) == view(second, node, k)
                states = [
                    run_program(program, b).state[k - 1, 0, node]
                    for b in (first, second)
                    if int(b.lengths[0]) - 1 >= k
                ]
                if len(states) == 2:
                    np.testing.assert_array_equal(states[0], states[1])
                    checked += 1
    assert checked > 50


@pytest.fixture
def fresh_forward():
    """``forward`` caches its jitted function per config: trace it anew here."""
    forward.cache_clear()
    yield
    forward.cache_clear()


def _isolated_node_hidden(hint_mode: str, far_edge: bool) -> np.ndarray:
    """Node 3's hidden state at every step of a random DFS network.

    Node 3 has no edge; nodes 0, 1, 2 have the edge 0 -> 1, and 1 -> 2 or not.
    """
    a = np.zeros((4, 4))
    a[0, 1] = 1
    if far_edge:
        a[1, 2] = 1
    batch = batch_from_graph("dfs", a)
    config = NetworkConfig(algorithm="dfs", hidden_size=16, hint_mode=hint_mode)
    params = init_params(config, batch, seed=0)
    out = forward(config)(params, batch)
    return np.asarray(out.hiddens)[:, 0, 3]


def test_clrs_feeds_decisions_taken_over_every_node_back_to_an_isolated_node(
    fresh_forward,
):
    """The way around the lemma: hints decoded over all nodes and fed back.

    With hints only decoded, the isolated node's hidden state is the same
    whatever the rest of the graph is, at every step (it attends to itself
    only).  With hints encoded too (CLRS's default), from step 1 on it is
    not: the mask_one hints (``s``, ``u``, ``v``, ``s_last``) are softmaxes
    over all nodes and the pointer rows softmaxes over all targets, and step
    1 encodes what step 0 decoded.  At step 0 both graphs feed dm-clrs's
    identical first hint, so the states still agree there.
    """
    alone = [_isolated_node_hidden("decoded_only", far) for far in (False, True)]
    np.testing.assert_allclose(alone[0], alone[1], rtol=0, atol=1e-6)
    fed = [_isolated_node_hidden("encoded_decoded", far) for far in (False, True)]
    np.testing.assert_allclose(fed[0][0], fed[1][0], rtol=0, atol=1e-6)
    assert np.abs(fed[0][1:] - fed[1][1:]).max() > 1e-3


@pytest.mark.parametrize(
    "kind,carries",
    [("pointer", True), ("mask_one", True), ("categorical", False), ("scalar", False)],
)
def test_which_fed_back_hints_reach_an_isolated_node(
    monkeypatch, fresh_forward, kind, carries
):
    """Only the hints decoded over all nodes carry the rest of the graph.

    Every other kind's feedback is zeroed.  ``pointer`` (``pi_h``,
    ``s_prev``: a softmax over all targets) and ``mask_one`` (``s``, ``u``,
    ``v``, ``s_last``: a softmax over all nodes) reach node 3.  ``color``
    is a softmax over its own three classes and ``d``, ``f`` are the node's
    own values; ``time``, a graph scalar, enters only the attention logits,
    and a node without neighbours has one candidate whatever its logits.
    """
    real = encoders.feedback

    def only(logits, typ, hard):
        data = real(logits, typ, hard)
        return data if typ == kind else jnp.zeros_like(data)

    monkeypatch.setattr(encoders, "feedback", only)
    runs = [_isolated_node_hidden("encoded_decoded", far) for far in (False, True)]
    moved = np.abs(runs[0] - runs[1]).max()
    assert (moved > 1e-3) if carries else (moved < 1e-6), moved


def _v_witness_graphs() -> tuple[np.ndarray, np.ndarray]:
    """Graph 1: 0 -> 2 -> 3 on 5 nodes; graph 2: 0 -> 1 on 10 nodes.

    At hint 6, dm-clrs's ``v`` is node 4 of graph 1 (node 3 found no white
    out-neighbour: ``v = N - 1``) and node 2 of graph 2 (node 0's tree is
    done: ``v`` is the next root).  Node 4 of graph 1 and node 8 of graph 2
    (both pos 4/5), and node 1 of graph 1 and node 2 of graph 2 (both pos
    1/5), are isolated and untouched up to hint 5.
    """
    first, second = np.zeros((5, 5)), np.zeros((10, 10))
    first[0, 2] = first[2, 3] = 1
    second[0, 1] = 1
    return first, second


def test_dfs_v_after_a_failed_scan_needs_the_graph_size():
    """dm-clrs's ``v = N - 1`` quirk: no size-free exact network decodes it.

    ``v`` is a softmax over per-node logits.  The search finds two graphs
    that need the logits of two equal pairs of views ordered both ways.
    With views that know ``N`` (not size-free, as CLRS's inputs are not)
    the two graphs share no view, and nothing is found.
    """
    first, second = _v_witness_graphs()
    witness = find_argmax_witness("dfs", [first, second])
    assert witness is not None
    assert (witness.probe, witness.hint) == ("v", 6)
    assert witness.winners == (4, 2) and witness.losers == (1, 8)
    assert "node 4 and node 8 see the same" in str(witness)
    for steps in (2, 5):
        assert find_argmax_witness("dfs", [first, second], steps) is not None
    interned: dict[tuple, int] = {}
    known = [
        feedback_views(batch_from_graph("dfs", g), 1, interned) for g in (first, second)
    ]
    assert not set(known[0].ravel()) & set(known[1].ravel())
    assert find_argmax_witness("dfs", [first, second], probes=("s", "u")) is None
    with pytest.raises(ValueError, match="no mask_one hint"):
        find_argmax_witness("dfs", [first], probes=("color",))
    with pytest.raises(ValueError, match="takes a source"):
        find_argmax_witness("bfs", [first])
    assert argmax_hints("dfs") == ("s", "u", "v", "s_last")


def test_a_dfs_network_fed_the_exact_hints_cannot_tell_the_witness_nodes_apart(
    fresh_forward,
):
    """The premise of the witness, on CLRS's network itself.

    A random DFS network fed dm-clrs's hints (teacher forcing, i.e. exact
    hard feedback) gives node 4 of the 5-node graph and node 8 of the
    10-node graph the same hidden state at every step up to hint 6's
    decoding, and so node 1 and node 2.  ``v``'s logit is a linear map of
    a node's features and states, so the network ranks the pairs the same
    way in both graphs, while dm-clrs ranks them opposite ways.  Node 9 of
    the 10-node graph (pos 9/10, which holds ``v`` after each failed scan)
    is the control: its state differs from node 4's, so the comparison
    sees differences where there are some.
    """
    first, second = _v_witness_graphs()
    config = NetworkConfig(
        algorithm="dfs",
        hidden_size=16,
        num_heads=2,
        msg_passing_steps=2,
        hint_teacher_forcing=1.0,
    )
    batches = [batch_from_graph("dfs", g) for g in (first, second)]
    params = init_params(config, batches[0], seed=0)
    hidden = [
        np.asarray(forward(config, repred=False)(params, b).hiddens)[:6, 0]
        for b in batches
    ]
    np.testing.assert_allclose(hidden[0][:, 4], hidden[1][:, 8], rtol=0, atol=1e-6)
    np.testing.assert_allclose(hidden[0][:, 1], hidden[1][:, 2], rtol=0, atol=1e-6)
    assert np.abs(hidden[0][:, 4] - hidden[1][:, 9]).max() > 1e-3
    v = [np.asarray(b.hints["v"][6, 0]) for b in batches]
    assert v[0].argmax() == 4 and v[1].argmax() == 2
