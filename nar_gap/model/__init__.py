"""The CLRS GATv2 in Flax, with dm-clrs's semantics, and import of dm-clrs models."""
