"""Figure names: the paper's numbers where it gives them, none borrowed."""

from nar_gap.paper.experiments.naming import figure_stem, landscape_stem


def test_bfs_figures_take_the_papers_numbers():
    assert figure_stem(1, "bfs", "internal_vs_accuracy") == (
        "fig1_bfs_internal_vs_accuracy"
    )
    assert figure_stem(11, "bfs", "trace_over_time") == "fig11_bfs_trace_over_time"
    assert landscape_stem("bfs", "learned") == "fig17_bfs_landscape_learned"


def test_bellman_ford_is_named_by_its_appendix_section_not_bfs_numbers():
    assert figure_stem(1, "bellman_ford", "internal_vs_accuracy") == (
        "figD2_bellman_ford_internal_vs_accuracy"
    )
    assert figure_stem(10, "bellman_ford", "external_vs_accuracy") == (
        "figD2_bellman_ford_external_vs_accuracy"
    )


def test_our_figures_borrow_no_number():
    assert figure_stem(1, "dfs", "internal_vs_accuracy") == (
        "fig_dfs_internal_vs_accuracy"
    )
    assert figure_stem(5, "bellman_ford_edge_info", "solution_clusters") == (
        "fig_bellman_ford_edge_info_solution_clusters"
    )
    assert figure_stem(None, "bfs", "cluster_sensitivity") == (
        "fig_bfs_cluster_sensitivity"
    )
    assert landscape_stem("bellman_ford", "compiled") == (
        "fig_landscape_bellman_ford_compiled"
    )
    assert landscape_stem("dfs", "initial") == "fig_landscape_dfs_initial"
