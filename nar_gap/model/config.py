"""The network's options (:class:`NetworkConfig`) and what one forward pass returns."""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax

from nar_gap.tasks.defaults import HIDDEN_SIZE

HintMode = Literal["encoded_decoded", "decoded_only", "none"]
Reprediction = Literal["soft", "hard", "hard_on_eval"]
EncoderInit = Literal["default", "xavier_on_scalars"]

HINT_MODES: tuple[str, ...] = ("encoded_decoded", "decoded_only", "none")
EDGE_MAPS: tuple[str, ...] = ("channel", "eqs_11_13", "fork")
SIMPLE_POINTER_DECODERS: tuple[str, ...] = ("bilinear", "fork")
# The forms of the authors' fork whose parameters have the graph size's shape.
SIZE_LOCKED_EDGE_MAPS: tuple[str, ...] = ("fork",)
SIZE_LOCKED_POINTER_DECODERS: tuple[str, ...] = ("fork",)
REPRED_MODES: tuple[str, ...] = ("soft", "hard", "hard_on_eval")

SpecEntry = tuple[str, str, str, str]  # (name, stage, location, type)


@dataclasses.dataclass(frozen=True)
class NetworkConfig:
    """Architecture and hint-loop options; defaults are the paper's (run.py's).

    Attributes:
      algorithm: one of :data:`nar_gap.tasks.specs.ALGORITHMS`.
      hidden_size: D (benchmark 128; the paper's minimal models use 4).
      num_heads: H attention heads; must divide ``hidden_size``.
      use_ln: layer norm at the end of the processor.
      hint_mode: ``encoded_decoded`` | ``decoded_only`` | ``none``.
      hint_repred_mode: ``soft`` | ``hard`` | ``hard_on_eval``.
      hint_teacher_forcing: probability of feeding ground-truth hints in training.
      msg_passing_steps: processor applications per hint step (shared weights).
      dropout_prob: dropout on the processor output, training only.
      use_edge_info: the paper's edge information in the selected values.
      edge_map: how the edge information is made (with ``use_edge_info``;
        the authors' fork, ``LSaldyt/clrs``, see docs/choices.md):
        ``channel`` adds the attention-weighted channel 0 of the encoded
        edges to channel 0 of every head, without parameters (the fork up to
        commit e686e21, branch ``master``; what the compiler uses);
        ``eqs_11_13`` is our reading of the paper's Eqs. 11-13 (whose symbols
        the text lost): a linear map of the encoded edges to D channels,
        selected by the attention and summed over senders; ``fork`` is the
        fork's learned form (commit cef64d2, "Generalize GATv2 edge info",
        branch ``dfs_reverse``): the same selected map, but the senders are
        combined by one learned linear map over the sender axis,
        ``Σ_j w_j α_ij ε_ij + c``, whose ``N`` weights lock the model to
        ``fork_num_nodes`` nodes (and, as in the fork, to one head).
      use_pre_att_bias: the paper's learned ``N x N`` pre-attention bias.
      pre_att_bias_nodes: side of that bias (largest graph it accepts).
      encoder_init: ``xavier_on_scalars`` (run.py) or ``default``.
      simplify_decoders: appendix A's option for the minimal models: the
        node-pointer decoders become ``simple_pointer_decoder``'s form; the
        other decoders are single linear maps already and stay as they are.
      simple_pointer_decoder: with ``simplify_decoders``, ``bilinear``
        (nar_gap's own choice, size-free: ``(W1 h_i) . (W2 h_j)``, CLRS's
        original pointer decoder) or ``fork`` (the fork's definition, branch
        ``dfs_reverse``: ``-C max(L1 h_i, L2 h_i)_j`` with two maps to ``N``
        outputs, reading neither ``h_j`` nor the edges; locked to
        ``fork_num_nodes`` nodes).  See
        :class:`~nar_gap.model.decoders.BilinearPointerDecoder` and
        :class:`~nar_gap.model.decoders.ForkPointerDecoder`.
      simple_pointer_scale: ``C`` of the fork's simplified pointer decoder
        (the fork hard-codes 1000 and marks it as to be parameterised).
      fork_num_nodes: ``N``, the graph size the fork's size-locked forms
        (``edge_map="fork"``, ``simple_pointer_decoder="fork"``) are built
        for: a batch of any other node count (padding included) is refused.
      state_probe_size: 0 (default), or the width of a learned linear probe
        read off every step's hidden state (``NetOutput.probed``).  It feeds
        nothing back: hidden-state supervision
        (:mod:`~nar_gap.training.supervision`) trains it to decode the
        compiled model's variables, so that the network is pushed to hold
        them linearly.
    """

    algorithm: str
    hidden_size: int = HIDDEN_SIZE
    num_heads: int = 1
    use_ln: bool = True
    hint_mode: HintMode = "encoded_decoded"
    hint_repred_mode: Reprediction = "soft"
    hint_teacher_forcing: float = 0.0
    msg_passing_steps: int = 1
    dropout_prob: float = 0.0
    use_edge_info: bool = False
    edge_map: str = "channel"
    use_pre_att_bias: bool = False
    pre_att_bias_nodes: int = 16
    encoder_init: EncoderInit = "xavier_on_scalars"
    simplify_decoders: bool = False
    state_probe_size: int = 0
    simple_pointer_decoder: str = "bilinear"
    simple_pointer_scale: float = 1000.0
    fork_num_nodes: int = 16

    def __post_init__(self) -> None:
        problems = []
        self.spec_entries()  # raises UnknownAlgorithmError with the known names
        if self.hidden_size < 1:
            problems.append(f"hidden_size must be >= 1, got {self.hidden_size}")
        if self.state_probe_size < 0:
            problems.append(
                f"state_probe_size must be >= 0, got {self.state_probe_size}"
            )
        if self.num_heads < 1 or self.hidden_size % max(self.num_heads, 1):
            problems.append(
                f"num_heads must be >= 1 and divide hidden_size={self.hidden_size},"
                f" got {self.num_heads}"
            )
        problems.extend(self._fork_problems())
        if self.hint_mode not in HINT_MODES:
            problems.append(
                f"hint_mode must be one of {HINT_MODES}, got {self.hint_mode!r}"
            )
        if self.hint_repred_mode not in REPRED_MODES:
            problems.append(
                f"hint_repred_mode must be one of {REPRED_MODES}, got "
                f"{self.hint_repred_mode!r}"
            )
        if not 0.0 <= self.hint_teacher_forcing <= 1.0:
            problems.append(
                "hint_teacher_forcing must be in [0, 1], got "
                f"{self.hint_teacher_forcing}"
            )
        if self.msg_passing_steps < 1:
            problems.append(
                f"msg_passing_steps must be >= 1, got {self.msg_passing_steps}"
            )
        if not 0.0 <= self.dropout_prob < 1.0:
            problems.append(f"dropout_prob must be in [0, 1), got {self.dropout_prob}")
        if self.pre_att_bias_nodes < 1:
            problems.append(
                f"pre_att_bias_nodes must be >= 1, got {self.pre_att_bias_nodes}"
            )
        if self.encoder_init not in ("default", "xavier_on_scalars"):
            problems.append(f"unknown encoder_init {self.encoder_init!r}")
        if problems:
            raise ValueError("invalid NetworkConfig: " + "; ".join(problems))

    def _fork_problems(self) -> list[str]:
        """The edge map and pointer decoder names, and what the fork's forms need."""
        problems = []
        if self.edge_map not in EDGE_MAPS:
            problems.append(
                f"edge_map must be one of {EDGE_MAPS}, got {self.edge_map!r}"
            )
        if self.simple_pointer_decoder not in SIMPLE_POINTER_DECODERS:
            problems.append(
                f"simple_pointer_decoder must be one of {SIMPLE_POINTER_DECODERS},"
                f" got {self.simple_pointer_decoder!r}"
            )
        if self.fork_num_nodes < 1:
            problems.append(f"fork_num_nodes must be >= 1, got {self.fork_num_nodes}")
        if self.use_edge_info and self.edge_map == "fork" and self.num_heads != 1:
            problems.append(
                "edge_map='fork' needs num_heads=1: the fork adds a message-wide"
                f" edge value to each head's output, got {self.num_heads} heads"
            )
        return problems

    @property
    def size_locked(self) -> tuple[str, ...]:
        """The options in use whose parameters have ``fork_num_nodes``'s shape."""
        locked = []
        if self.use_edge_info and self.edge_map in SIZE_LOCKED_EDGE_MAPS:
            locked.append(f"edge_map={self.edge_map!r}")
        if (
            self.simplify_decoders
            and self.simple_pointer_decoder in SIZE_LOCKED_POINTER_DECODERS
        ):
            locked.append(f"simple_pointer_decoder={self.simple_pointer_decoder!r}")
        return tuple(locked)

    def check_num_nodes(self, num_nodes: int) -> None:
        """Refuse, in one line, a graph size the size-locked forms cannot run.

        The fork's learned edge map and simplified pointer decoder have weights
        with one entry per node, so a model runs only at the size it was built
        for; without this check another size fails deep inside Flax with a
        shape error.  Padding counts: the batch's node axis must be ``N``.
        """
        locked = self.size_locked
        if locked and num_nodes != self.fork_num_nodes:
            raise ValueError(
                f"the fork's size-locked forms ({', '.join(locked)}) run on "
                f"graphs of fork_num_nodes={self.fork_num_nodes} nodes only "
                "(padding included), "
                f"got a batch of {num_nodes}: train, validate and test at "
                f"{self.fork_num_nodes} nodes"
            )

    @property
    def encode_hints(self) -> bool:
        """Whether hints are encoded (fed back) at every step."""
        return self.hint_mode == "encoded_decoded"

    @property
    def decode_hints(self) -> bool:
        """Whether hints are decoded (predicted) at every step."""
        return self.hint_mode in ("encoded_decoded", "decoded_only")

    def spec_entries(self) -> tuple[SpecEntry, ...]:
        """The spec as a hashable tuple, in dm-clrs's order.

        The spec registry is imported here, not at the top: it loads
        dm-clrs's samplers (``nar_gap.tasks._clrs``), which a configuration --
        and ``nar-gap --help``, whose defaults are read from this class --
        should not wait for.
        """
        from nar_gap.tasks.specs import get_spec

        return tuple(
            (name, stage, loc, typ)
            for name, (stage, loc, typ) in get_spec(self.algorithm).items()
        )


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class NetOutput:
    """Everything one forward pass produces, per step where it varies in time.

    Attributes:
      outputs: raw logits/values of each output, frozen at step ``L_b - 2``.
      hint_preds: raw decoder outputs per step, ``[S, B, ...]`` (step t
        predicts ``hint[t + 1]``).
      attention: ``[S, B, H, N, N]`` attention of the last message-passing
        step of every hint step (rows receivers, columns senders).
      hiddens: ``[S, B, N, D]`` processor output of every step.
      probed: ``[S, B, N, P]`` the state probe's read-out of ``hiddens``
        (``state_probe_size`` P), or None without a probe.
    """

    outputs: dict[str, jax.Array]
    hint_preds: dict[str, jax.Array]
    attention: jax.Array
    hiddens: jax.Array
    probed: jax.Array | None = None
