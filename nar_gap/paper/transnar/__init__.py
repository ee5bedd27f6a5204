"""TransNAR: a Transformer over CLRS-Text that cross-attends to a frozen GNN."""
