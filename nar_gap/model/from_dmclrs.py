"""Import dm-clrs ``BaselineModel`` (gatv2) parameters into a nar_gap model.

This is two things at once: the proof that :mod:`nar_gap.model.network` has dm-clrs's
semantics (the parity tests compare ``predict`` outputs to 1e-4), and a feature:
a researcher who trained with dm-clrs can analyse that model's attention,
faithfulness and loss landscape here.

Haiku -> nar_gap names (``{w, b}`` -> ``{kernel, bias}``, same ``[in, out]`` layout):

====================================================  =================================
dm-clrs (Haiku)                                        nar_gap (Flax, under ``net/``)
====================================================  =================================
``.../gatv2_aggr_clrs_processor/linear``               ``processor/value``
``.../linear_1``                                       ``processor/skip``
``.../linear_2`` (sender, ``W_1``)                     ``processor/sender``
``.../linear_3`` (receiver, ``W_2``)                   ``processor/receiver``
``.../linear_4`` / ``linear_5``                        ``processor/edge`` / ``graph``
``.../linear_{6+h}``                                   ``processor/head_<h>``
``.../layer_norm`` ``{scale, offset}``                 ``processor/layer_norm``
``~_construct_encoders_decoders/algo_0_<x>_enc_linear``  ``encoder_<x>``
``~_construct_encoders_decoders/algo_0_<x>_dec_linear[_k]``  ``decoder_<x>/linear_<k>``
====================================================  =================================
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from nar_gap.model.config import NetworkConfig
from nar_gap.model.decoders import postprocess
from nar_gap.model.model import Model
from nar_gap.tasks._clrs import clrs, clrs_probing
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.specs import get_spec
from nar_gap.tasks.vocabulary import Stage, Type

_PROCESSOR_LAYERS = {
    "linear": "value",
    "linear_1": "skip",
    "linear_2": "sender",
    "linear_3": "receiver",
    "linear_4": "edge",
    "linear_5": "graph",
}


class ClrsImportError(ValueError):
    """The Haiku parameters do not look like a dm-clrs gatv2 BaselineModel's."""


def _dense(haiku_layer: Mapping[str, Any]) -> dict[str, jax.Array]:
    return {
        "kernel": jnp.asarray(haiku_layer["w"], jnp.float32),
        "bias": jnp.asarray(haiku_layer["b"], jnp.float32),
    }


def convert_haiku_params(haiku_params: Mapping[str, Mapping[str, Any]]) -> dict:
    """dm-clrs Haiku params -> nar_gap ``{"net": {...}}`` params (see module doc)."""
    net: dict[str, Any] = {}
    processor: dict[str, Any] = {}
    for path, layer in haiku_params.items():
        module = path.rsplit("/", 1)[-1]
        if "_processor" in path and "gatv2" in path:
            if module in _PROCESSOR_LAYERS:
                processor[_PROCESSOR_LAYERS[module]] = _dense(layer)
            elif module == "layer_norm":
                processor["layer_norm"] = {
                    "scale": jnp.asarray(layer["scale"], jnp.float32),
                    "bias": jnp.asarray(layer["offset"], jnp.float32),
                }
            elif re.fullmatch(r"linear_\d+", module) and int(module[7:]) >= 6:
                processor[f"head_{int(module[7:]) - 6}"] = _dense(layer)
            else:
                raise ClrsImportError(f"unexpected processor layer {path!r}")
            continue
        match = re.fullmatch(r"algo_0_(.+)_(enc|dec)_linear(?:_(\d+))?", module)
        if match is None:
            raise ClrsImportError(
                f"unexpected parameter {path!r}: expected a gatv2 processor layer or "
                "an 'algo_0_<name>_enc_linear' / '_dec_linear[_k]' layer (only "
                "single-algorithm gatv2 BaselineModels are supported)"
            )
        name, kind, index = match.group(1), match.group(2), int(match.group(3) or 0)
        if kind == "enc":
            if index:
                raise ClrsImportError(f"two-way (edge pointer) encoder {path!r}")
            net[f"encoder_{name}"] = _dense(layer)
        else:
            net.setdefault(f"decoder_{name}", {})[f"linear_{index}"] = _dense(layer)
    if not processor:
        raise ClrsImportError("no gatv2 processor parameters found (was it 'gatv2'?)")
    net["processor"] = processor
    return {"net": net}


def _infer_shape(
    haiku_params: Mapping[str, Mapping[str, Any]],
) -> tuple[int, int, bool]:
    """(hidden_size, num_heads, use_ln) as the parameters imply them."""
    heads, hidden, use_ln = 0, None, False
    for path, layer in haiku_params.items():
        if "_processor" not in path:
            continue
        module = path.rsplit("/", 1)[-1]
        if module == "linear":
            hidden = int(np.shape(layer["w"])[1])
        elif module == "layer_norm":
            use_ln = True
        elif re.fullmatch(r"linear_\d+", module) and int(module[7:]) >= 6:
            heads += 1
    if hidden is None or heads == 0:
        raise ClrsImportError("could not find the gatv2 value map and head vectors")
    return hidden, heads, use_ln


def features_to_batch(features: Any, algorithm: str) -> Batch:
    """A dm-clrs ``Features`` (inputs, hints, lengths) as a nar_gap Batch."""
    spec = get_spec(algorithm)

    def convert(dp) -> np.ndarray:
        typ = spec[dp.name][2]
        dtype = np.int32 if typ == Type.POINTER else np.float32
        return np.asarray(dp.data).astype(dtype)

    inputs = {dp.name: convert(dp) for dp in features.inputs}
    hints = {dp.name: convert(dp) for dp in features.hints}
    lengths = np.asarray(features.lengths).astype(np.int32)
    pos = inputs.get("pos")
    if pos is None:
        raise ClrsImportError("features have no 'pos' input")
    node_mask = np.ones(pos.shape, bool)
    return Batch(
        algorithm=algorithm,
        inputs=inputs,
        hints=hints,
        outputs={},
        lengths=lengths,
        node_mask=node_mask,
    )


@dataclasses.dataclass(frozen=True)
class ClrsModel(Model):
    """A nar_gap :class:`Model` that also answers like ``BaselineModel.predict``."""

    def predict(self, features: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """``(outputs, hint_preds)`` in dm-clrs's formats.

        Outputs are hard post-processed ``clrs.DataPoint``s (pointers as float
        indices, as dm-clrs returns them); hint predictions are a list over
        steps of ``{name: raw decoder output}``, like ``predict(...,
        return_hints=True)``.
        """
        batch = features_to_batch(features, self.config.algorithm)
        out = self.apply(batch, repred=True)
        spec = get_spec(self.config.algorithm)
        outputs = {}
        for name, (stage, loc, typ) in spec.items():
            if stage != Stage.OUTPUT:
                continue
            # dm-clrs hands pointers back as float node indices.
            data = np.asarray(postprocess(typ, out.outputs[name], hard=True))
            data = data.astype(np.float32) if typ == Type.POINTER else data
            outputs[name] = clrs_probing.DataPoint(
                name=name, location=loc, type_=typ, data=data
            )
        num_steps = int(next(iter(out.attention.shape[:1])))
        hint_preds = [
            {name: np.asarray(preds[t]) for name, preds in out.hint_preds.items()}
            for t in range(num_steps)
        ]
        return outputs, hint_preds


_HINT_MODE_OF = {  # (hint encoders?, hint decoders?) -> hint_mode
    (True, True): "encoded_decoded",
    (False, True): "decoded_only",
    (False, False): "none",
}
_DM_CLRS_FLAGS = {
    "encoded_decoded": "encode_hints=True, decode_hints=True",
    "decoded_only": "encode_hints=False, decode_hints=True (dm-clrs's default)",
    "none": "encode_hints=False, decode_hints=False",
}


def infer_hint_mode(net_params: Mapping[str, Any], algorithm: str) -> str:
    """The hint mode the converted parameters imply: which hints have layers.

    dm-clrs builds an encoder for each hint only with ``encode_hints=True`` and
    a decoder only with ``decode_hints=True``, so the parameters say which.
    """
    hints = [
        n for n, (stage, _, _) in get_spec(algorithm).items() if stage == Stage.HINT
    ]
    encoded = any(f"encoder_{name}" in net_params for name in hints)
    decoded = any(f"decoder_{name}" in net_params for name in hints)
    if (encoded, decoded) not in _HINT_MODE_OF:
        raise ClrsImportError(
            "the parameters encode hints but do not decode them (dm-clrs "
            "encode_hints=True, decode_hints=False), which nar_gap does not model"
        )
    return _HINT_MODE_OF[(encoded, decoded)]


def from_clrs(
    params: Mapping[str, Mapping[str, Any]],
    algorithm: str,
    *,
    hidden_size: int | None = None,
    nb_heads: int | None = None,
    use_ln: bool | None = None,
    hint_mode: str | None = None,
    hint_repred_mode: str = "soft",
    nb_msg_passing_steps: int = 1,
) -> ClrsModel:
    """A nar_gap model from a dm-clrs gatv2 ``BaselineModel``'s ``params``.

    Args:
      params: ``BaselineModel.params`` (Haiku's ``{module path: {w, b}}``).
      algorithm: the algorithm the model was trained on.
      hidden_size: as given to dm-clrs; inferred from the parameters when
        None, checked against them when given (so are the next three).
      nb_heads: as given to dm-clrs.
      use_ln: as given to dm-clrs.
      hint_mode: as given to dm-clrs; inferred from which hints have encoders
        and decoders.
      hint_repred_mode: as given to dm-clrs (not visible in the parameters;
        the default is dm-clrs's).
      nb_msg_passing_steps: as given to dm-clrs (likewise).

    Raises:
      ClrsImportError: the parameters are not a single-algorithm gatv2 model's,
        or disagree with a stated option.
    """
    inferred_hidden, inferred_heads, inferred_ln = _infer_shape(params)
    converted = convert_haiku_params(params)
    inferred_mode = infer_hint_mode(converted["net"], algorithm)
    for label, given, inferred in (
        ("hidden_size", hidden_size, inferred_hidden),
        ("nb_heads", nb_heads, inferred_heads),
        ("use_ln", use_ln, inferred_ln),
    ):
        if given is not None and given != inferred:
            raise ClrsImportError(f"{label}={given} but the parameters have {inferred}")
    if hint_mode is not None and hint_mode != inferred_mode:
        raise ClrsImportError(
            f"hint_mode={hint_mode!r} but the parameters are those of dm-clrs "
            f"{_DM_CLRS_FLAGS[inferred_mode]}, i.e. hint_mode={inferred_mode!r} "
            "(leave hint_mode out to infer it)"
        )
    hint_mode = inferred_mode
    config = NetworkConfig(
        algorithm=algorithm,
        hidden_size=inferred_hidden,
        num_heads=inferred_heads,
        use_ln=inferred_ln,
        hint_mode=hint_mode,  # type: ignore[arg-type]
        hint_repred_mode=hint_repred_mode,  # type: ignore[arg-type]
        msg_passing_steps=nb_msg_passing_steps,
    )
    return ClrsModel(config=config, params=converted)


__all__ = ["ClrsImportError", "ClrsModel", "convert_haiku_params", "from_clrs", "clrs"]
