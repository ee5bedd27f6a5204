"""TransNAR in Flax: a decoder-only Transformer whose tokens may read a frozen NAR.

Bounsi et al. (2024) join a language model reading CLRS-Text with a GNN
pre-trained on CLRS-30 and frozen: at every layer, after causal
self-attention, each token cross-attends to the NAR's node embeddings of the
same problem's graph, through a gate (Flamingo's ``tanh``-gated residual) that
starts closed, so training begins from the Transformer alone.  Positions are
*randomised* (Ruoss et al., 2023): each sequence's positions are a sorted
random subset of ``[0, max_position)``, so a model trained on short sequences
has already seen the large position values that long test sequences need.

Choices where the paper is silent or its scale does not fit a CPU (said in
docs/transnar.md too): a pre-norm block; sinusoidal encodings of the sampled
positions (TransNAR's scheme; two controls, :data:`POSITION_SCHEMES`, measure
what it costs: the indices ``0 .. L-1``, and no encoding at all; and
:data:`ENCODINGS`, rotary ones in their place); one scalar
gate per layer on the cross-attention only; the NAR's
embeddings layer-normalised before their projection (a compiled network's
hidden features and a trained one's have different scales, and the same
Transformer must read both); the output head tied to the token embedding.

Decoding keeps a cache of every layer's keys and values (:meth:`TransNAR.prefill`
and :meth:`TransNAR.step`), so a greedy answer of ``k`` tokens after a prompt
of ``L`` costs one pass over the prompt and ``k`` single-token steps, not
``k`` passes over ``L`` tokens: what makes 4x larger graphs affordable on a CPU.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from nar_gap.model.layers import Dense, DenseGeneral, Embed, LayerNorm, ShapeChecked

Cache = tuple[tuple[jax.Array, jax.Array], ...]  # per layer: keys, values [B, L, H, Dh]

# How a token's place reaches the model.  "randomised": TransNAR's (Ruoss et
# al.), sorted random draws below max_position; "indices": 0 .. L-1, the
# standard encoding, which no position beyond training's longest sequence
# was ever read with; "none": no encoding (causal attention alone orders the
# tokens, Kazemnejad et al. 2023).  The last two are controls: they say what
# the randomised draw costs in training (benchmarks/transnar_competence.py).
POSITION_SCHEMES = ("randomised", "indices", "none")

# How a drawn position enters the model.  "sinusoidal": added to the token
# embedding (Vaswani et al.), so attention sees where a token lies;
# "rotary": queries and keys rotated by it (RoPE, Su et al. 2021), so
# attention sees only how far apart two tokens lie, never where they lie;
# "sinusoidal_rotary": both, so the two can be told apart.  Ruoss et al.
# randomise each; which lets a small model learn CLRS-Text is measured by
# benchmarks/transnar_competence.py (docs/transnar.md).
ENCODINGS = ("sinusoidal", "rotary", "sinusoidal_rotary")
_ADDED = frozenset({"sinusoidal", "sinusoidal_rotary"})  # the embedding gets it
_ROTATED = frozenset({"rotary", "sinusoidal_rotary"})  # queries and keys turn


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
    """The architecture of the Transformer and of its bridge to the NAR.

    Attributes:
      vocab_size: number of token ids.
      width: model width (token embedding and residual stream).
      layers: Transformer blocks.
      heads: attention heads (``width`` divisible by it).
      mlp_ratio: the feed-forward layer's width over ``width``.
      max_position: positions are drawn from ``[0, max_position)``; it must
        exceed the longest sequence the model will ever read.
      nar_width: the NAR's node-embedding width; 0 builds the Transformer
        alone (no cross-attention parameters).
      positions: one of :data:`POSITION_SCHEMES`; what
        :func:`draw_positions` gives and whether the model encodes it.
      encoding: one of :data:`ENCODINGS`; how the drawn positions enter
        (``positions="none"`` encodes nothing and keeps the default).
      min_wavelength: the sinusoidal encoding keeps only the frequencies
        whose wavelength is at least this many positions (0: all of them):
        a randomised draw's fast frequencies are noise to the model, its
        slow ones say roughly where in the sequence a token lies.
    """

    vocab_size: int
    width: int = 64
    layers: int = 2
    heads: int = 4
    mlp_ratio: int = 4
    max_position: int = 4096
    nar_width: int = 0
    positions: str = "randomised"
    encoding: str = "sinusoidal"
    min_wavelength: int = 0

    def __post_init__(self) -> None:
        if self.positions not in POSITION_SCHEMES:
            raise ValueError(
                f"TransformerConfig: positions {self.positions!r} is not one of "
                f"{', '.join(POSITION_SCHEMES)}"
            )
        if self.encoding not in ENCODINGS:
            raise ValueError(
                f"TransformerConfig: encoding {self.encoding!r} is not one of "
                f"{', '.join(ENCODINGS)}"
            )
        if self.positions == "none" and self.encoding != ENCODINGS[0]:
            raise ValueError(
                f"TransformerConfig: positions 'none' encode nothing; "
                f"encoding {self.encoding!r} needs positions"
            )
        if self.min_wavelength < 0 or (
            self.min_wavelength and self.encoding not in _ADDED
        ):
            raise ValueError(
                f"TransformerConfig: min_wavelength {self.min_wavelength} needs "
                f"to be >= 0 and a sinusoidal encoding, found {self.encoding!r}"
            )
        if self.width % self.heads:
            raise ValueError(
                f"TransformerConfig: width {self.width} is not divisible by "
                f"{self.heads} heads"
            )
        if min(self.vocab_size, self.width, self.layers, self.heads) < 1:
            raise ValueError("TransformerConfig: sizes must be positive")

    @property
    def adds_sinusoid(self) -> bool:
        """Whether the token embedding gets its position's sinusoidal encoding."""
        return self.positions != "none" and self.encoding in _ADDED

    @property
    def rotates(self) -> bool:
        """Whether self-attention turns queries and keys by their positions."""
        return self.encoding in _ROTATED

    @property
    def cross_attention(self) -> bool:
        """Whether the tokens read a NAR (TransNAR) or not (the Transformer alone)."""
        return self.nar_width > 0


def _frequencies(half: int) -> jax.Array:
    """``half`` frequencies, geometric from 1 down to about ``1 / 10 000``."""
    return jnp.exp(-jnp.log(10_000.0) * jnp.arange(half) / half)


def sinusoidal(
    positions: jax.Array, width: int, min_wavelength: float = 0.0
) -> jax.Array:
    """Sinusoidal encodings of integer ``positions [...]``: ``[..., width]``.

    A frequency whose wavelength is below ``min_wavelength`` positions gives
    zeros (its sine and its cosine), so only the slower ones say anything.
    """
    half = width // 2
    frequencies = _frequencies(half)
    angles = positions[..., None].astype(jnp.float32) * frequencies
    encoding = jnp.concatenate([jnp.sin(angles), jnp.cos(angles)], axis=-1)
    slow = jnp.tile(2 * jnp.pi / frequencies >= min_wavelength, 2)
    encoding = jnp.where(slow, encoding, 0.0)
    return jnp.pad(encoding, [(0, 0)] * positions.ndim + [(0, width - 2 * half)])


def rotary(x: jax.Array, positions: jax.Array) -> jax.Array:
    """``x [B, L, H, Dh]`` with each pair of features rotated by ``positions [B, L]``.

    Feature ``d`` pairs with ``d + Dh/2`` and turns by ``position * f_d``,
    the frequencies spaced as :func:`sinusoidal`'s over the head's width, so
    the dot product of a rotated query and a rotated key depends on the two
    positions only through their difference.  An odd last feature is left
    as it is.
    """
    half = x.shape[-1] // 2
    angles = positions[..., None, None].astype(jnp.float32) * _frequencies(half)
    cos, sin = jnp.cos(angles), jnp.sin(angles)
    first, second, rest = x[..., :half], x[..., half : 2 * half], x[..., 2 * half :]
    turned = [first * cos - second * sin, first * sin + second * cos, rest]
    return jnp.concatenate(turned, axis=-1).astype(x.dtype)


def random_positions(
    rng: np.random.Generator,
    lengths: np.ndarray,
    width: int,
    max_position: int,
    windows: bool = False,
) -> np.ndarray:
    """Randomised positions: for each row, ``lengths[b]`` sorted distinct draws.

    Row ``b`` gets a sorted sample without replacement from ``[0,
    max_position)`` in its first ``lengths[b]`` slots and 0 after them (those
    slots are padding and never read).  ``width`` is the row length.

    Drawn from the whole range (Ruoss et al., TransNAR), a sequence of ``L``
    tokens has its positions about ``max_position / L`` apart, so a model
    trained on short sequences only ever reads sparse positions and a long
    test sequence's are denser than any it saw.  ``windows`` draws each row
    from a window of ``[0, max_position)`` instead, its span log-uniform
    between the row's length and ``max_position`` and its offset uniform, so
    training sees every density the test sequences have (and every value).
    """
    if int(np.max(lengths, initial=0)) > max_position:
        raise ValueError(
            f"a sequence of {int(np.max(lengths))} tokens needs max_position >= "
            f"its length, found {max_position}"
        )
    out = np.zeros((len(lengths), width), dtype=np.int32)
    for row, length in enumerate(lengths):
        span, offset = max_position, 0
        if windows and length:
            drawn_span = np.exp(rng.uniform(np.log(length), np.log(max_position)))
            span = max(int(drawn_span), int(length))
            offset = int(rng.integers(0, max_position - span + 1))
        drawn = rng.choice(span, size=int(length), replace=False)
        out[row, : int(length)] = offset + np.sort(drawn)
    return out


def draw_positions(
    config: TransformerConfig,
    rng: np.random.Generator,
    lengths: np.ndarray,
    width: int,
    windows: bool = False,
) -> np.ndarray:
    """Each row's positions under ``config.positions`` (0 on its padding).

    ``randomised`` is :func:`random_positions` (``windows`` as there); the
    ``indices`` are ``0 .. lengths[b]-1``; ``none`` gives zeros, which the
    model does not encode.  ``windows`` is a way of drawing randomised
    positions and an error with the other schemes.
    """
    if config.positions == "randomised":
        return random_positions(rng, lengths, width, config.max_position, windows)
    if windows:
        raise ValueError(f"windows draw randomised positions, not {config.positions!r}")
    longest = int(np.max(lengths, initial=0))
    if longest > config.max_position:
        raise ValueError(
            f"a sequence of {longest} tokens needs max_position >= its length, "
            f"found {config.max_position}"
        )
    out = np.zeros((len(lengths), width), dtype=np.int32)
    if config.positions == "indices":
        slots = np.arange(width)
        out[:] = np.where(slots[None] < np.asarray(lengths)[:, None], slots[None], 0)
    return out


class Attention(nn.Module):
    """Multi-head attention with its projections apart, so keys can be cached.

    With ``rotate``, queries and keys are turned by their tokens' positions
    (:func:`rotary`) and the positions must be given; keys are cached turned.
    """

    width: int
    heads: int
    rotate: bool = False

    def setup(self) -> None:  # noqa: D102 - Flax's constructor
        head = self.width // self.heads
        self.query = DenseGeneral((self.heads, head), name="query")
        self.key = DenseGeneral((self.heads, head), name="key")
        self.value = DenseGeneral((self.heads, head), name="value")
        self.out = DenseGeneral(self.width, axis=(-2, -1), name="out")

    def _turned(self, x: jax.Array, positions: jax.Array | None) -> jax.Array:
        if not self.rotate:
            return x
        if positions is None:
            raise ValueError("rotary attention needs the tokens' positions")
        return rotary(x, positions)

    def keys_values(
        self, x: jax.Array, positions: jax.Array | None = None
    ) -> tuple[jax.Array, jax.Array]:
        """``x [B, L, W]`` -> keys and values ``[B, L, H, Dh]``."""
        return self._turned(self.key(x), positions), self.value(x)

    def attend(
        self,
        x: jax.Array,
        keys: jax.Array,
        values: jax.Array,
        mask: jax.Array,
        positions: jax.Array | None = None,
    ) -> tuple[jax.Array, jax.Array]:
        """Queries from ``x [B, Lq, W]`` over ``keys``; ``mask [B, Lq, Lk]``.

        Returns the output ``[B, Lq, W]`` and the weights ``[B, H, Lq, Lk]``.
        A query whose mask is empty gets zero weights (and output 0 before the
        output projection), not a uniform average of what it may not read.
        """
        queries = self._turned(self.query(x), positions)
        scale = 1.0 / np.sqrt(queries.shape[-1])
        logits = jnp.einsum("bqhd,bkhd->bhqk", queries, keys) * scale
        allowed = mask[:, None, :, :]
        logits = jnp.where(allowed, logits, jnp.finfo(logits.dtype).min)
        weights = jax.nn.softmax(logits, axis=-1) * allowed
        mixed = jnp.einsum("bhqk,bkhd->bqhd", weights, values)
        return self.out(mixed), weights

    def __call__(
        self, x: jax.Array, memory: jax.Array, mask: jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        """Attention of ``x`` over ``memory`` (itself, for self-attention)."""
        keys, values = self.keys_values(memory)
        return self.attend(x, keys, values, mask)


class Block(ShapeChecked):
    """Pre-norm block: causal self-attention, gated cross-attention, MLP."""

    config: TransformerConfig

    def setup(self) -> None:  # noqa: D102 - Flax's constructor
        c = self.config
        self.norm_self = LayerNorm(name="norm_self")
        self.self_attention = Attention(
            c.width, c.heads, rotate=c.rotates, name="self_attention"
        )
        self.norm_mlp = LayerNorm(name="norm_mlp")
        self.mlp_in = Dense(c.width * c.mlp_ratio, name="mlp_in")
        self.mlp_out = Dense(c.width, name="mlp_out")
        if c.cross_attention:
            self.norm_cross = LayerNorm(name="norm_cross")
            self.cross_attention = Attention(c.width, c.heads, name="cross_attention")
            # Closed at initialisation: tanh(0) = 0, so an untrained TransNAR
            # is exactly its Transformer (Flamingo's gated cross-attention).
            self.gate = self.param("gate", nn.initializers.zeros, ())

    def _cross_and_mlp(
        self, x: jax.Array, nar: jax.Array | None, nar_mask: jax.Array | None
    ) -> tuple[jax.Array, jax.Array | None]:
        weights = None
        if self.config.cross_attention:
            mask = jnp.broadcast_to(
                nar_mask[:, None, :], (x.shape[0], x.shape[1], nar_mask.shape[-1])
            )
            read, weights = self.cross_attention(self.norm_cross(x), nar, mask)
            x = x + jnp.tanh(self.gate) * read
        x = x + self.mlp_out(nn.gelu(self.mlp_in(self.norm_mlp(x))))
        return x, weights

    def __call__(
        self,
        x: jax.Array,
        positions: jax.Array,
        self_mask: jax.Array,
        nar: jax.Array | None,
        nar_mask: jax.Array | None,
    ) -> tuple[jax.Array, tuple[jax.Array, jax.Array], jax.Array | None]:
        """The whole sequence: the output, its keys and values, cross weights."""
        normed = self.norm_self(x)
        attention = self.self_attention
        keys, values = attention.keys_values(normed, positions)
        read, _ = attention.attend(normed, keys, values, self_mask, positions)
        x, weights = self._cross_and_mlp(x + read, nar, nar_mask)
        return x, (keys, values), weights

    def step(
        self,
        x: jax.Array,
        position: jax.Array,
        cache: tuple[jax.Array, jax.Array],
        index: jax.Array,
        key_mask: jax.Array,
        nar: jax.Array | None,
        nar_mask: jax.Array | None,
    ) -> tuple[jax.Array, tuple[jax.Array, jax.Array], jax.Array | None]:
        """One new token ``x [B, 1, W]`` at ``position [B, 1]``, in slot ``index``."""
        normed = self.norm_self(x)
        attention = self.self_attention
        new_keys, new_values = attention.keys_values(normed, position)
        keys = jax.lax.dynamic_update_slice_in_dim(cache[0], new_keys, index, axis=1)
        values = jax.lax.dynamic_update_slice_in_dim(
            cache[1], new_values, index, axis=1
        )
        mask = key_mask[:, None, :]
        read, _ = attention.attend(normed, keys, values, mask, position)
        x, weights = self._cross_and_mlp(x + read, nar, nar_mask)
        return x, (keys, values), weights


class TransNAR(nn.Module):
    """Tokens in, next-token logits out; with ``nar_width > 0`` the tokens read a NAR.

    ``nar [B, N, D]`` are the frozen NAR's node embeddings, ``nar_mask [B,
    N]`` True on real nodes: a padded node is never attended to.
    """

    config: TransformerConfig

    def setup(self) -> None:  # noqa: D102 - Flax's constructor
        c = self.config
        self.embed = Embed(c.vocab_size, c.width, name="embed")
        self.blocks = [Block(c, name=f"block_{i}") for i in range(c.layers)]
        self.norm_out = LayerNorm(name="norm_out")
        if c.cross_attention:
            self.norm_nar = LayerNorm(name="norm_nar")
            self.nar_in = Dense(c.width, name="nar_in")

    def _inputs(self, tokens: jax.Array, positions: jax.Array) -> jax.Array:
        c = self.config
        if not c.adds_sinusoid:
            return self.embed(tokens)
        return self.embed(tokens) + sinusoidal(positions, c.width, c.min_wavelength)

    def _nar(self, nar: jax.Array | None) -> jax.Array | None:
        if not self.config.cross_attention:
            return None
        if nar is None:
            raise ValueError("TransNAR with nar_width > 0 needs the NAR's embeddings")
        return self.nar_in(self.norm_nar(nar))

    def _logits(self, x: jax.Array) -> jax.Array:
        return self.embed.attend(self.norm_out(x))

    def __call__(
        self,
        tokens: jax.Array,
        positions: jax.Array,
        token_mask: jax.Array,
        nar: jax.Array | None = None,
        nar_mask: jax.Array | None = None,
        with_attention: bool = False,
    ) -> Any:
        """Logits ``[B, L, V]`` (and each layer's cross-attention weights).

        ``token_mask [B, L]`` is True on real tokens; attention is causal and
        never reads a padded token.
        """
        logits, _, weights = self.prefill(tokens, positions, token_mask, nar, nar_mask)
        return (logits, weights) if with_attention else logits

    def prefill(
        self,
        tokens: jax.Array,
        positions: jax.Array,
        token_mask: jax.Array,
        nar: jax.Array | None = None,
        nar_mask: jax.Array | None = None,
    ) -> tuple[jax.Array, Cache, tuple[jax.Array | None, ...]]:
        """The whole sequence at once: logits, every layer's keys and values."""
        length = tokens.shape[1]
        causal = jnp.tril(jnp.ones((length, length), dtype=bool))
        self_mask = causal[None] & token_mask[:, None, :]
        memory = self._nar(nar)
        x = self._inputs(tokens, positions)
        cache, weights = [], []
        for block in self.blocks:
            x, keys_values, cross = block(x, positions, self_mask, memory, nar_mask)
            cache.append(keys_values)
            weights.append(cross)
        return self._logits(x), tuple(cache), tuple(weights)

    def step(
        self,
        token: jax.Array,
        position: jax.Array,
        cache: Cache,
        index: jax.Array,
        key_mask: jax.Array,
        nar: jax.Array | None = None,
        nar_mask: jax.Array | None = None,
    ) -> tuple[jax.Array, Cache, tuple[jax.Array | None, ...]]:
        """One token per row (``[B]``) at cache slot ``index``: its logits ``[B, V]``.

        ``key_mask [B, Lc]`` says which cache slots hold real tokens, this
        one's included.
        """
        memory = self._nar(nar)
        x = self._inputs(token[:, None], position[:, None])
        new_cache, weights = [], []
        for block, layer_cache in zip(self.blocks, cache, strict=True):
            x, keys_values, cross = block.step(
                x, position[:, None], layer_cache, index, key_mask, memory, nar_mask
            )
            new_cache.append(keys_values)
            weights.append(cross)
        return self._logits(x)[:, 0], tuple(new_cache), tuple(weights)


def init_params(config: TransformerConfig, seed: int, num_nodes: int = 4) -> Any:
    """The initial parameters of ``TransNAR(config)`` for ``seed``."""
    tokens = jnp.zeros((1, 8), dtype=jnp.int32)
    nar = (
        jnp.zeros((1, num_nodes, config.nar_width)) if config.cross_attention else None
    )
    mask = jnp.ones((1, num_nodes), dtype=bool) if config.cross_attention else None
    variables = TransNAR(config).init(
        jax.random.PRNGKey(seed), tokens, tokens, tokens >= 0, nar, mask
    )
    return variables["params"]
