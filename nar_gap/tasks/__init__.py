"""The dm-clrs boundary, numpy only: specs, samplers, batches, graphs, exactness."""
