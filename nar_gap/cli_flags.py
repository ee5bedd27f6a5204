"""``nar-gap train``'s flags, made from the configuration dataclasses.

Every field of :class:`~nar_gap.training.TrainConfig` and
:class:`~nar_gap.model.config.NetworkConfig` is the flag of its own name
(``learning_rate``: ``--learning-rate``), with the field's default and the
first sentence of its line in the class's ``Attributes:`` as its help.  A
field added to a config is a flag at once, under its name: nothing to
spell three times (field, ``add_argument``, keyword) or rename on the way.
The values a run needs checked are checked by the config itself, whose
``ValueError`` the CLI prints in one line.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import typing
from collections.abc import Iterable, Mapping
from typing import Any

#: A field's line in a class docstring's ``Attributes:``: its name (or names,
#: comma-separated, sharing one text), a colon, then its text, continued on
#: lines indented deeper.
_ATTRIBUTE = re.compile(r"^(?P<indent> +)(?P<names>\w+(?:, \w+)*): (?P<text>.*)$")


def field_docs(config_class: type) -> dict[str, str]:
    """Each documented field's text in ``config_class``'s ``Attributes:``."""
    docs: dict[str, str] = {}
    lines = (config_class.__doc__ or "").splitlines()
    start = next(
        (i for i, line in enumerate(lines) if line.strip() == "Attributes:"), None
    )
    if start is None:
        return docs
    names: list[str] = []
    indent = 0
    for line in lines[start + 1 :]:
        match = _ATTRIBUTE.match(line)
        if match and (not names or len(match["indent"]) == indent):
            names, indent = match["names"].split(", "), len(match["indent"])
            for name in names:
                docs[name] = match["text"].strip()
        elif names and line.strip() and len(line) - len(line.lstrip()) > indent:
            for name in names:
                docs[name] += " " + line.strip()
        elif line.strip():
            break
    return docs


def first_sentence(text: str) -> str:
    """The text up to its first full stop followed by a space (all of it if none)."""
    end = re.search(r"\.\s", text + " ")
    return text[: end.start() + 1] if end else text


def flag(name: str) -> str:
    """The flag of field ``name``: ``--`` and the name with dashes."""
    return "--" + name.replace("_", "-")


def _pair(text: str) -> tuple[int, int]:
    """``NxT`` (a shape bucket: nodes x trace steps) as a pair of integers."""
    try:
        nodes, steps = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected NODESxSTEPS such as 16x12, got {text!r}"
        ) from None
    return nodes, steps


def _argument(hint: Any, default: Any) -> dict[str, Any]:
    """``add_argument``'s keywords for a field of type ``hint``."""
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if hint is bool:
        return {"action": argparse.BooleanOptionalAction}
    if origin is typing.Literal:
        return {"choices": arguments}
    if origin is tuple and arguments[-1] is Ellipsis:
        item = arguments[0]
        if typing.get_origin(item) is tuple:
            return {"type": _pair, "nargs": "*", "metavar": "NxT"}
        return {"type": item, "nargs": "*" if default == () else "+"}
    if hint in (int, float, str):
        return {"type": hint}
    raise TypeError(f"no flag for a field of type {hint!r}")


def add_config_flags(
    parser: argparse.ArgumentParser,
    config_class: type,
    skip: Iterable[str] = (),
    derived: Mapping[str, str] = {},  # noqa: B006 (read only)
) -> None:
    """One flag per field of ``config_class``, less ``skip``.

    ``derived``: fields whose default the command works out itself (the
    text says how); their flag defaults to None, meaning "work it out".
    """
    hints = typing.get_type_hints(config_class)
    docs = field_docs(config_class)
    group = parser.add_argument_group(config_class.__name__)
    for field in dataclasses.fields(config_class):
        if field.name in skip:
            continue
        default = field.default
        keywords = _argument(hints[field.name], default)
        help_text = first_sentence(docs.get(field.name, ""))
        if field.name in derived:
            default = None
            help_text += f" Default: {derived[field.name]}."
        else:
            help_text += " Default: %(default)s."
        if keywords.get("nargs") and default is not None:
            default = list(default)
        group.add_argument(
            flag(field.name), default=default, help=help_text, **keywords
        )


def config_values(
    args: argparse.Namespace, config_class: type, skip: Iterable[str] = ()
) -> dict[str, Any]:
    """The fields of ``config_class`` as parsed, lists as tuples.

    Less ``skip``, and less any left at None (a derived field the caller
    works out).
    """
    values = {}
    for field in dataclasses.fields(config_class):
        if field.name in skip:
            continue
        value = getattr(args, field.name)
        if value is None:
            continue
        values[field.name] = tuple(value) if isinstance(value, list) else value
    return values
