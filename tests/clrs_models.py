"""dm-clrs's own models, built the way the parity tests and the measures need them.

Shared by tests in several layer folders (``tests/model``, ``tests/analysis``):
a module beside ``conftest.py`` is importable from all of them.
"""

from __future__ import annotations

import functools

import jax

from nar_gap.tasks._clrs import full_clrs

# The tests that build dm-clrs's models share one xdist group, so one worker
# imports TensorFlow (4.5 s, and its threads) and the other never does.
DM_CLRS_GROUP = "dm_clrs"


@functools.cache
def dm_clrs():
    """dm-clrs's full package (Haiku, TensorFlow), imported when a test first
    builds one of its models, not when pytest collects the tests: nar_gap
    loads only the light modules unless asked."""
    return full_clrs()


def clrs_baseline(
    algorithm,
    feedback,
    spec,
    *,
    hidden=16,
    heads=1,
    use_ln=True,
    hint_mode="encoded_decoded",
    repred="soft",
    seed=0,
    scale=1.0,
    teacher_forcing=0.0,
):
    clrs = dm_clrs()
    factory = clrs.get_processor_factory(
        "gatv2", use_ln=use_ln, nb_triplet_fts=0, nb_heads=heads
    )
    model = clrs.models.BaselineModel(
        spec=spec,
        dummy_trajectory=feedback,
        processor_factory=factory,
        hidden_dim=hidden,
        encode_hints=hint_mode == "encoded_decoded",
        decode_hints=hint_mode in ("encoded_decoded", "decoded_only"),
        hint_repred_mode=repred,
        encoder_init="xavier_on_scalars",
        hint_teacher_forcing=teacher_forcing,
    )
    model.init(feedback.features, seed)
    if scale != 1.0:  # sharper weights: attention and pointers far from uniform
        model.params = jax.tree_util.tree_map(lambda x: x * scale, model.params)
    return model
