"""JSON schemas in the form OpenAI's structured outputs (``"strict": true``) accept.

Strict mode wants every object closed (``additionalProperties: false``) with every property
required (an optional field stays nullable through its ``anyOf`` with ``null``), no ``null``
defaults, no single-entry ``allOf`` wrappers and no ``$ref`` with sibling keywords (such a
reference is inlined, its siblings winning). :func:`strict_json_schema` applies these rules;
it gives the schema the openai SDK's ``to_strict_json_schema`` gives for the same pydantic
model.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["strict_json_schema"]

_DEFS = ("$defs", "definitions")


def strict_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A strict copy of ``schema`` (a JSON schema object, such as a pydantic model's
    ``model_json_schema()``); ``schema`` itself is not changed."""
    if not isinstance(schema, dict):
        raise TypeError(f"strict_json_schema: expected a JSON schema dict, got {type(schema).__name__}")
    root = copy.deepcopy(schema)
    return _tighten(root, root, "#")


def _tighten(node: Any, root: dict[str, Any], where: str) -> dict[str, Any]:
    """Makes ``node`` strict in place (definitions first, so that a reference inlined
    later is already strict) and returns it."""
    if not isinstance(node, dict):
        raise TypeError(f"strict_json_schema: the schema at {where} is a {type(node).__name__}, expected an object")
    for key in _DEFS:
        defs = node.get(key)
        if isinstance(defs, dict):
            for name, sub in defs.items():
                _tighten(sub, root, f"{where}/{key}/{name}")
    if node.get("type") == "object":
        node.setdefault("additionalProperties", False)
    props = node.get("properties")
    if isinstance(props, dict):
        node["required"] = list(props)
        node["properties"] = {k: _tighten(v, root, f"{where}/properties/{k}") for k, v in props.items()}
    if isinstance(node.get("items"), dict):
        node["items"] = _tighten(node["items"], root, f"{where}/items")
    if isinstance(node.get("anyOf"), list):
        node["anyOf"] = [_tighten(v, root, f"{where}/anyOf/{i}") for i, v in enumerate(node["anyOf"])]
    all_of = node.get("allOf")
    if isinstance(all_of, list):
        if len(all_of) == 1:  # a lone wrapper (pydantic's way to describe a reference)
            del node["allOf"]
            node.update(_tighten(all_of[0], root, f"{where}/allOf/0"))
        else:
            node["allOf"] = [_tighten(v, root, f"{where}/allOf/{i}") for i, v in enumerate(all_of)]
    if "default" in node and node["default"] is None:
        del node["default"]  # the field is nullable anyway
    ref = node.get("$ref")
    if ref and len(node) > 1:
        merged = {**_resolve(root, ref), **node}
        del merged["$ref"]
        node.clear()
        node.update(merged)
        return _tighten(node, root, where)  # the inlined definition's keywords, tightened
    return node


def _resolve(root: dict[str, Any], ref: Any) -> dict[str, Any]:
    """The schema a local ``#/...`` reference points at."""
    if not isinstance(ref, str) or not ref.startswith("#/"):
        raise ValueError(f"strict_json_schema: only local references ('#/...') can be inlined, got {ref!r}")
    target: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(target, dict) or part not in target:
            raise ValueError(f"strict_json_schema: reference {ref!r} points at nothing")
        target = target[part]
    if not isinstance(target, dict):
        raise ValueError(f"strict_json_schema: reference {ref!r} points at a {type(target).__name__}, not a schema")
    return target
