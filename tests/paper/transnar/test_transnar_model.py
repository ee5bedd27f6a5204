"""TransNAR's model, decoding and training: the properties notebook 08 rests on.

The gate closed at initialisation makes an untrained TransNAR its
Transformer; padded nodes are never read; cached greedy decoding is the
argmax of full passes; a run resumed from its checkpoint is bit for bit the
run trained straight through.
"""

from __future__ import annotations

import dataclasses

import flax.serialization
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from draws import initialiser_draws
from lowerings import lowered

import nar_gap
from nar_gap.paper.transnar import decode as decoding
from nar_gap.paper.transnar.model import (
    ENCODINGS,
    TransformerConfig,
    TransNAR,
    draw_positions,
    init_params,
    random_positions,
    sinusoidal,
)
from nar_gap.paper.transnar.nar import nar_pointers, node_embeddings
from nar_gap.paper.transnar.tokenizer import vocabulary_size
from nar_gap.paper.transnar.training import (
    CHECKPOINT_FILE,
    TextTrainConfig,
    step_data,
    train_text_model,
)

CROSS_PARTS = ("norm_nar", "nar_in", "norm_cross", "cross_attention", "gate")


def _config(
    nar_width: int, positions: str = "randomised", encoding: str = "sinusoidal"
) -> TransformerConfig:
    return TransformerConfig(
        vocab_size=vocabulary_size(),
        width=16,
        layers=2,
        heads=2,
        max_position=256,
        nar_width=nar_width,
        positions=positions,
        encoding=encoding,
    )


def _without_cross(params: dict) -> dict:
    """A hybrid's parameters less its bridge: the Transformer alone's tree."""
    return {
        name: _without_cross(value) if isinstance(value, dict) else value
        for name, value in params.items()
        if name not in CROSS_PARTS
    }


def _open_gates(params: dict, value: float) -> dict:
    return jax.tree_util.tree_map_with_path(
        lambda path, x: x + value if "gate" in jax.tree_util.keystr(path) else x,
        params,
    )


def _inputs(batch: int = 3, length: int = 12, nodes: int = 5, width: int = 8):
    rng = np.random.default_rng(0)
    tokens = rng.integers(3, vocabulary_size(), size=(batch, length)).astype(np.int32)
    lengths = np.array([length, length - 3, length - 5])[:batch]
    mask = np.arange(length)[None] < lengths[:, None]
    positions = random_positions(rng, lengths, length, 256)
    nar = rng.normal(size=(batch, nodes, width)).astype(np.float32)
    return tokens, positions, mask, nar


def test_the_closed_gate_leaves_the_transformer_unchanged():
    hybrid_config, alone_config = _config(8), _config(0)
    hybrid = init_params(hybrid_config, seed=3)
    alone = _without_cross(flax.core.unfreeze(hybrid))
    assert jax.tree_util.tree_structure(alone) == jax.tree_util.tree_structure(
        init_params(alone_config, seed=3)
    )
    tokens, positions, mask, nar = _inputs()
    node_mask = np.ones(nar.shape[:2], bool)
    with_nar = TransNAR(hybrid_config).apply(
        {"params": hybrid}, tokens, positions, mask, nar, node_mask
    )
    without = TransNAR(alone_config).apply({"params": alone}, tokens, positions, mask)
    np.testing.assert_array_equal(np.asarray(with_nar), np.asarray(without))
    # The check can fail: a gate opened by 0.1 lets the NAR change the logits.
    opened = TransNAR(hybrid_config).apply(
        {"params": _open_gates(hybrid, 0.1)}, tokens, positions, mask, nar, node_mask
    )
    assert np.abs(np.asarray(opened) - np.asarray(without)).max() > 1e-4


def test_cross_attention_never_reads_a_padded_node():
    config = _config(8)
    params = _open_gates(init_params(config, seed=1), 0.8)
    tokens, positions, mask, nar = _inputs()
    node_mask = np.array(
        [[1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=bool
    )
    model = TransNAR(config)
    logits, weights = model.apply(
        {"params": params}, tokens, positions, mask, nar, node_mask, with_attention=True
    )
    for layer in weights:
        on_padding = np.asarray(layer) * ~node_mask[:, None, None, :]
        assert np.abs(on_padding).max() == 0.0
    # Whatever a padded node holds, the logits do not move ...
    changed = nar.copy()
    changed[~node_mask] = 1e3
    again = model.apply({"params": params}, tokens, positions, mask, changed, node_mask)
    np.testing.assert_array_equal(np.asarray(logits), np.asarray(again))
    # ... while a real node's embedding does move them (the check can fail).
    real = nar.copy()
    real[0, 0, 0] += 3.0  # one feature: a shift of all is normalised away
    moved = model.apply({"params": params}, tokens, positions, mask, real, node_mask)
    assert np.abs(np.asarray(moved) - np.asarray(logits)).max() > 1e-5


@pytest.mark.parametrize(
    ("nar_width", "positions", "encoding"),
    [
        (0, "randomised", "sinusoidal"),
        (8, "randomised", "sinusoidal"),
        (0, "indices", "sinusoidal"),
        (0, "none", "sinusoidal"),
        (8, "randomised", "rotary"),
        (0, "indices", "sinusoidal_rotary"),
    ],
)
def test_cached_greedy_decoding_is_the_argmax_of_full_passes(
    nar_width, positions, encoding
):
    config = _config(nar_width, positions, encoding)
    params = init_params(config, seed=2)
    if nar_width:
        params = _open_gates(params, 0.7)
    tokens, _, _, nar = _inputs()
    lengths = np.array([12, 9, 7])
    node_mask = np.array([[1, 1, 1, 1, 0]] * 3, dtype=bool)
    rng = np.random.default_rng(5)
    layout = decoding.prompt_layout(tokens, lengths, 6, config, rng)
    nar_in = nar if nar_width else None
    mask_in = node_mask if nar_width else None
    generated, weights = decoding.greedy_decode(config, params, layout, nar_in, mask_in)
    buffer, seen = layout.tokens.copy(), layout.prompt_mask.copy()
    model = TransNAR(config)
    for t in range(layout.max_new):
        logits = model.apply(
            {"params": params}, buffer, layout.positions, seen, nar_in, mask_in
        )
        chosen = np.argmax(np.asarray(logits[:, layout.prompt_slots - 1 + t]), -1)
        assert (generated[:, t] == chosen).all(), t
        buffer[:, layout.prompt_slots + t] = chosen
        seen[:, layout.prompt_slots + t] = True
    if nar_width:
        assert weights[0].shape == (3, config.heads, layout.max_new, 5)
        assert np.abs(weights[0][..., 4]).max() == 0.0  # the padded node


def test_a_hybrid_s_forward_pass_traces_no_initialiser(monkeypatch):
    """Its layers check their parameters by shape, as the CLRS network's do
    (``nar_gap.model.layers.ShapeChecked``): Flax's own trace each
    initialiser on every trace of ``apply`` (42 draws for this decoder, seen
    with ``nn.DenseGeneral`` and ``nn.Embed`` back); the programs are the
    same either way."""
    config = _config(8)
    draws = initialiser_draws(monkeypatch)
    params = init_params(config, seed=0)
    assert draws  # init draws its weights: the counter counts
    draws.clear()
    tokens, _, _, nar = _inputs()
    node_mask = np.ones(nar.shape[:2], dtype=bool)
    layout = decoding.prompt_layout(
        tokens, np.array([12, 9, 7]), 6, config, np.random.default_rng(0)
    )
    decode = decoding._decoder(config, layout.prompt_slots, layout.max_new)
    decode.trace(
        params, layout.tokens, layout.positions, layout.prompt_mask, nar, node_mask
    )
    assert draws == []


def test_random_positions_are_sorted_distinct_and_bounded():
    rng = np.random.default_rng(0)
    positions = random_positions(rng, np.array([5, 3]), 6, 10)
    assert positions.shape == (2, 6)
    for row, length in zip(positions, (5, 3), strict=True):
        real = row[:length]
        assert (np.diff(real) > 0).all() and real.max() < 10
        assert (row[length:] == 0).all()
    with pytest.raises(ValueError, match="max_position"):
        random_positions(rng, np.array([11]), 11, 10)


def test_each_position_scheme_draws_what_it_says():
    lengths = np.array([5, 3])
    drawn = {
        scheme: draw_positions(_config(0, scheme), np.random.default_rng(4), lengths, 6)
        for scheme in ("randomised", "indices", "none")
    }
    same_draw = random_positions(np.random.default_rng(4), lengths, 6, 256)
    assert (drawn["randomised"] == same_draw).all()  # TransNAR's, unchanged
    assert drawn["indices"].tolist() == [[0, 1, 2, 3, 4, 0], [0, 1, 2, 0, 0, 0]]
    assert not drawn["none"].any()
    indices, rng = _config(0, "indices"), np.random.default_rng(0)
    with pytest.raises(ValueError, match="windows draw randomised"):
        draw_positions(indices, rng, lengths, 6, windows=True)
    with pytest.raises(ValueError, match="max_position"):
        draw_positions(indices, rng, np.array([300]), 300)
    with pytest.raises(ValueError, match="not one of"):
        _config(0, "rotary")
    with pytest.raises(ValueError, match="encoding 'alibi' is not one of"):
        _config(0, "indices", "alibi")
    with pytest.raises(ValueError, match="'none' encode nothing"):
        _config(0, "none", "rotary")


@pytest.mark.parametrize(
    ("positions", "reads_them"), [("none", False), ("indices", True)]
)
def test_a_model_without_an_encoding_reads_no_position(positions, reads_them):
    config = _config(0, positions)
    params = init_params(config, seed=1)
    tokens, _, mask, _ = _inputs()
    near = np.tile(np.arange(12, dtype=np.int32), (3, 1))
    apart = near * 7 + 3

    def logits(at):
        return np.asarray(TransNAR(config).apply({"params": params}, tokens, at, mask))

    assert (not np.array_equal(logits(near), logits(apart))) == reads_them


@pytest.mark.parametrize(
    ("encoding", "shift_blind"),
    [("rotary", True), ("sinusoidal", False), ("sinusoidal_rotary", False)],
)
def test_rotary_attention_reads_only_how_far_apart_tokens_lie(encoding, shift_blind):
    """Every position moved by the same amount: a rotary model's logits stay
    (to float32), a sinusoidal one's change; spacing changed moves both."""
    config = _config(0, "randomised", encoding)
    params = init_params(config, seed=3)
    tokens, _, mask, _ = _inputs()
    positions = np.tile(np.arange(12, dtype=np.int32) * 3, (3, 1))

    def logits(at):
        return np.asarray(TransNAR(config).apply({"params": params}, tokens, at, mask))

    base = logits(positions)
    shifted = np.abs(logits(positions + 1000) - base).max()
    assert (shifted < 1e-3) == shift_blind, shifted
    assert np.abs(logits(positions * 2) - base).max() > 1e-3


def test_both_encodings_are_each_one_s_part_at_once():
    """Same parameters (the encodings add none): sinusoidal_rotary differs
    from each alone, and with every position 0 (no rotation, no offset
    beyond sin 0 and cos 0) it is the sinusoidal model."""
    configs = {e: _config(0, "randomised", e) for e in ENCODINGS}
    params = init_params(configs["sinusoidal"], seed=3)
    tokens, positions, mask, _ = _inputs()

    def logits(encoding, at):
        model = TransNAR(configs[encoding])
        return np.asarray(model.apply({"params": params}, tokens, at, mask))

    both = logits("sinusoidal_rotary", positions)
    for alone in ("sinusoidal", "rotary"):
        assert np.abs(both - logits(alone, positions)).max() > 1e-3, alone
    zeros = np.zeros_like(positions)
    same = logits("sinusoidal_rotary", zeros) - logits("sinusoidal", zeros)
    assert np.abs(same).max() < 1e-5


def test_min_wavelength_keeps_only_the_slow_frequencies():
    """Frequencies faster than the bound give zeros and the others are as
    before; with every frequency removed, both encodings are rotary alone."""
    positions = jnp.arange(40)[None] * 97
    full = np.asarray(sinusoidal(positions, 64))
    slow = np.asarray(sinusoidal(positions, 64, min_wavelength=1024))
    frequencies = np.exp(-np.log(10_000.0) * np.arange(32) / 32)
    kept = np.tile(2 * np.pi / frequencies >= 1024, 2)
    assert 0 < kept.sum() < 64
    assert np.array_equal(slow[..., kept], full[..., kept])
    assert not slow[..., ~kept].any() and full[..., ~kept].any()
    tokens, drawn, mask, _ = _inputs()
    rotary_config = _config(0, "randomised", "rotary")
    params = init_params(rotary_config, seed=3)
    silent = dataclasses.replace(
        rotary_config, encoding="sinusoidal_rotary", min_wavelength=10**9
    )

    def logits(config):
        return np.asarray(
            TransNAR(config).apply({"params": params}, tokens, drawn, mask)
        )

    assert np.abs(logits(silent) - logits(rotary_config)).max() < 1e-5
    heard = dataclasses.replace(silent, min_wavelength=64)
    assert np.abs(logits(heard) - logits(rotary_config)).max() > 1e-3
    for wrong in ({"min_wavelength": -1}, {"encoding": "rotary"}):
        with pytest.raises(ValueError, match="min_wavelength"):
            dataclasses.replace(heard, **wrong)


def _spreads(windows: bool, length: int = 20, rows: int = 400) -> np.ndarray:
    """Each row's spread (last position minus first) over ``rows`` draws."""
    rng = np.random.default_rng(1)
    lengths = np.full(rows, length)
    positions = random_positions(rng, lengths, length, 4096, windows=windows)
    assert (np.diff(positions, axis=1) > 0).all() and positions.max() < 4096
    return positions[:, -1] - positions[:, 0]


def test_windows_train_on_every_density_the_whole_range_on_one():
    """Drawn from the whole range, 20 positions always spread over most of it,
    so a model trained on them never sees a long sequence's density; windows
    give dense rows and sparse ones, every value still reachable."""
    whole, windows = _spreads(False), _spreads(True)
    assert np.quantile(whole, 0.05) > 3000  # always sparse
    assert np.quantile(windows, 0.1) < 400  # often as dense as ~200 tokens
    assert np.quantile(windows, 0.9) > 1500  # and often as sparse
    rng = np.random.default_rng(2)
    reach = random_positions(rng, np.full(2000, 4), 4, 4096, windows=True)
    assert reach.min() < 64 and reach.max() > 4096 - 64


def test_the_whole_range_is_the_default_and_training_draws_as_configured():
    config = _train_config(4, 0)
    assert not config.position_windows
    whole = step_data(config, 3)
    windowed = step_data(_train_config(4, 0, position_windows=True), 3)
    assert (windowed.sequences.tokens == whole.sequences.tokens).all()
    assert (windowed.positions != whole.positions).any()


def _train_config(steps: int, nar_width: int, **changes) -> TextTrainConfig:
    fields = dict(
        algorithm="bfs",
        model=_config(nar_width),
        nar="compiled" if nar_width else "none",
        seed=4,
        steps=steps,
        batch_size=4,
        train_sizes=(4, 5),
        warmup_steps=1,
        checkpoint_every=1,
    )
    fields.update(changes)
    return TextTrainConfig(**fields)


@pytest.fixture(scope="module")
def compiled_bfs():
    model = nar_gap.compile("bfs", 32)
    return lambda graphs: node_embeddings(model, graphs)


def test_a_resumed_run_is_the_run_trained_straight_through(tmp_path, compiled_bfs):
    config = _train_config(4, 32)
    straight = train_text_model(config, tmp_path / "a", compiled_bfs, progress=False)
    train_text_model(config, tmp_path / "b", compiled_bfs, progress=False, stop_at=2)
    saved = flax.serialization.msgpack_restore(
        (tmp_path / "b" / CHECKPOINT_FILE).read_bytes()
    )
    assert int(saved["step"]) == 2
    resumed = train_text_model(config, tmp_path / "b", compiled_bfs, progress=False)
    for a, b in zip(
        jax.tree_util.tree_leaves(straight), jax.tree_util.tree_leaves(resumed),
        strict=True,
    ):  # fmt: skip
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert (tmp_path / "a" / "training_loss.csv").read_text() == (
        tmp_path / "b" / "training_loss.csv"
    ).read_text()
    # A finished run is read back, not trained again.
    again = train_text_model(config, tmp_path / "a", compiled_bfs, progress=False)
    np.testing.assert_array_equal(
        jax.tree_util.tree_leaves(again)[0], jax.tree_util.tree_leaves(straight)[0]
    )


def test_a_process_reading_results_reads_a_finished_run_and_trains_nothing(
    tmp_path, monkeypatch
):
    """Notebook 08 with ``FROM_RESULTS``: a finished run is read back, and one
    that would train is refused in one line before its folder is made (seen
    training when the refusal was only in the NAR's trainer)."""
    from nar_gap.training.run import READING_RESULTS_ENV

    config = _train_config(1, 0, seed=13, train_sizes=(5,))  # its own step
    done = train_text_model(config, tmp_path / "done", progress=False)
    monkeypatch.setenv(READING_RESULTS_ENV, "1")
    again = train_text_model(config, tmp_path / "done", progress=False)
    np.testing.assert_array_equal(
        jax.tree_util.tree_leaves(again)[0], jax.tree_util.tree_leaves(done)[0]
    )
    with pytest.raises(RuntimeError, match="training refused: .* seed 13"):
        train_text_model(config, tmp_path / "new", progress=False)
    assert not (tmp_path / "new").exists()


def test_the_seeds_of_a_configuration_share_one_compiled_step(tmp_path):
    """The update is lowered once for two seeds (it was once per seed)."""
    with lowered() as names:
        for seed in (11, 12):
            config = _train_config(1, 0, seed=seed, train_sizes=(4,))
            train_text_model(config, tmp_path / str(seed), progress=False)
    assert names.count("jit(update)") == 1, names


def test_step_data_is_a_function_of_seed_and_step():
    config = _train_config(4, 0)
    first, again = step_data(config, 3), step_data(config, 3)
    assert first.texts.prompts == again.texts.prompts
    np.testing.assert_array_equal(first.positions, again.positions)
    other = step_data(_train_config(4, 0, seed=5), 3)
    assert other.texts.prompts != first.texts.prompts


def test_bad_runs_fail_in_one_line_and_keep_what_was_done(tmp_path):
    config = _train_config(3, 0)
    out = tmp_path / "run"
    train_text_model(config, out, progress=False, stop_at=1)
    with pytest.raises(ValueError, match="another configuration"):
        train_text_model(_train_config(3, 0, seed=9), out, progress=False)
    kept = (out / CHECKPOINT_FILE).read_bytes()
    (out / CHECKPOINT_FILE).write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="corrupt"):
        train_text_model(config, out, progress=False)
    (out / CHECKPOINT_FILE).write_bytes(kept)
    # A NaN learning rate: the first update is not finite, and stops the run
    # before it overwrites the checkpoint of step 1.
    nan = _train_config(3, 0, learning_rate=float("nan"))
    with pytest.raises(FloatingPointError, match="non-finite"):
        train_text_model(nan, tmp_path / "nan", progress=False)
    assert not (tmp_path / "nan" / CHECKPOINT_FILE).exists()
    with pytest.raises(ValueError, match="nar_width"):
        _train_config(3, 0, nar="compiled")
    with pytest.raises(ValueError, match="bfs, bellman_ford"):
        _train_config(3, 0, algorithm="dfs")


def test_the_compiled_nar_answers_exactly_on_text_graphs():
    """The ceiling the hybrid reads from: the compiled NAR's own pointers."""
    from nar_gap.tasks.clrs_text import text_batch

    for algorithm in ("bfs", "bellman_ford"):
        texts = text_batch(algorithm, 8, 8, seed=1)
        model = nar_gap.compile(algorithm, 128)
        np.testing.assert_array_equal(
            nar_pointers(model, texts.graphs), texts.graphs.outputs["pi"]
        )
        embeddings, mask = node_embeddings(model, texts.graphs)
        assert embeddings.shape == (8, 8, 128) and mask.all()


def test_answers_do_not_depend_on_how_the_batch_is_chunked(monkeypatch):
    """Each row's positions are drawn once for the whole batch: a chunk of one
    row reads the positions it would read in a chunk of three."""
    from nar_gap.paper.transnar import evaluation
    from nar_gap.tasks.clrs_text import text_batch

    config = _config(0)
    params = init_params(config, seed=6)
    texts = text_batch("bfs", 4, 3, seed=2)
    decode_rows = evaluation.greedy_decode

    def answers() -> tuple[tuple[str, ...], np.ndarray]:
        seen = []

        def spy(config, params, layout, *rest):
            seen.append(layout.positions)
            return decode_rows(config, params, layout, *rest)

        monkeypatch.setattr(evaluation, "greedy_decode", spy)
        out = evaluation.generate(config, params, texts, np.random.default_rng(1))
        return out, np.concatenate(seen)[: texts.batch_size]

    whole, positions = answers()
    monkeypatch.setattr(evaluation, "_ATTENTION_BUDGET", 1)  # one row per chunk
    chunked, chunked_positions = answers()
    assert chunked == whole
    np.testing.assert_array_equal(chunked_positions, positions)
