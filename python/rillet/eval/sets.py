"""Eval sets: cases of turns, each with what the agent should do and answer (docs/evaluation.md).

The same objects are written in Python or read from a JSON (or, with the ``eval`` extra, YAML)
file, whose shape is the JSON schema :func:`eval_set_schema` gives (shipped as
``rillet/eval/evalset.schema.json``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from rillet.errors import EvalSetError

__all__ = [
    "SCHEMA_PATH",
    "Answer",
    "EvalCase",
    "EvalSet",
    "EvalSetError",
    "ExpectedCall",
    "ExpectedInterrupt",
    "Judge",
    "Trajectory",
    "Turn",
    "eval_set_schema",
    "load_eval_set",
]

SCHEMA_PATH = Path(__file__).with_name("evalset.schema.json")
"""The published JSON schema of eval set files (what :func:`eval_set_schema` returns)."""

MatchMode = Literal["exact", "in_order", "any_order", "subset"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ExpectedCall(_Model):
    """One tool call the agent should make: the tool's ``name`` and, unless None (any
    arguments), its ``arguments``: all of them (``arguments_match="exact"``) or at least these
    (``"subset"``: the call may have more)."""

    name: str
    arguments: dict[str, Any] | None = None
    arguments_match: Literal["exact", "subset"] = "exact"


class Trajectory(_Model):
    """The tool calls a turn should make, and how to compare them with the calls made:

    * ``exact``: these calls, in this order, and no others;
    * ``in_order``: these calls in this order, other calls allowed between them;
    * ``any_order``: each of these calls, in any order, other calls allowed;
    * ``subset``: no call outside these (each used at most once); some may be skipped.
    """

    calls: tuple[ExpectedCall, ...] = ()
    match: MatchMode = "exact"


class Judge(_Model):
    """A model's verdict on the answer against ``rubric``. The model is the one given to the run
    (``run_eval(..., judge_model=...)``); it must reply with the JSON object
    ``{"verdict": "pass" | "fail", "reason": "..."}`` and nothing else."""

    rubric: str


class Answer(_Model):
    """What the turn's final answer (the last assistant text) must be; every criterion given
    must hold. ``json_schema`` parses the answer as JSON and validates it (the ``eval`` extra's
    jsonschema); a pydantic model is given in Python as ``output_model``."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    exact: str | None = None
    contains: tuple[str, ...] = ()
    not_contains: tuple[str, ...] = ()
    regex: str | None = None
    json_schema: dict[str, Any] | None = None
    output_model: SkipJsonSchema[type[BaseModel] | None] = Field(default=None, exclude=True)
    judge: Judge | None = None

    @field_validator("regex")
    @classmethod
    def _compiles(cls, regex: str | None) -> str | None:
        # Checked here, not at the first run: a bad pattern is the eval set's fault, not the agent's.
        if regex is not None:
            try:
                re.compile(regex)
            except re.error as e:
                raise ValueError(f"not a valid regular expression: {e}") from None
        return regex

    @field_validator("json_schema")
    @classmethod
    def _valid_schema(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        if schema is None:
            return None
        try:
            import jsonschema  # type: ignore[import-untyped]  # optional: the `eval` extra (no stubs installed)
        except ImportError:
            return schema  # the check says what to install when it runs
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.exceptions.SchemaError as e:
            where = "/".join(str(p) for p in e.absolute_path) or "the top"
            raise ValueError(f"not a valid JSON schema (at {where}): {e.message}") from None
        return schema


class ExpectedInterrupt(_Model):
    """An interrupt the turn should stop at, and the data to resume it with. ``tool`` names the
    tool that asks (its ``info["tool"]``, as :func:`rillet.tools.approval.requires_approval`
    gives, or the last ``tool:<name>:...`` segment of its address); None matches any interrupt.
    ``resume`` is the resume data (for an approval: ``"approve"``, ``"reject"`` or an
    ``{"decision": ...}`` object)."""

    tool: str | None = None
    resume: Any = None


class Turn(_Model):
    """One user message and what should follow it."""

    input: str
    trajectory: Trajectory | None = None
    answer: Answer | None = None
    interrupts: tuple[ExpectedInterrupt, ...] = ()


class EvalCase(_Model):
    """A conversation of one or more turns, in one session seeded with ``session_state``.
    Run ``repeat`` times (default: the set's, else the run's); it passes when at least
    ``min_pass_rate`` of its runs pass every check."""

    id: str = Field(min_length=1)  # names the case in reports, --case, pytest ids and cassettes
    turns: tuple[Turn, ...] = Field(min_length=1)
    session_state: dict[str, Any] = Field(default_factory=dict)
    min_pass_rate: float = Field(default=1.0, ge=0.0, le=1.0)
    repeat: int | None = Field(default=None, ge=1)
    description: str = ""


class EvalSet(_Model):
    """Named cases (their ids unique)."""

    name: str = Field(min_length=1)
    cases: tuple[EvalCase, ...] = Field(min_length=1)  # no cases would pass, checking nothing
    description: str = ""
    repeat: int | None = Field(default=None, ge=1)
    schema_url: str | None = Field(default=None, alias="$schema", description="for editors: the schema's path or URL")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _unique_ids(self) -> EvalSet:
        seen: set[str] = set()
        for case in self.cases:
            if case.id in seen:
                raise ValueError(f"two cases have the id {case.id!r}")
            seen.add(case.id)
        return self


def eval_set_schema() -> dict[str, Any]:
    """The JSON schema of an eval set file."""
    schema = EvalSet.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def load_eval_set(path: str | Path) -> EvalSet:
    """The eval set in ``path``: JSON (``.json``) or YAML (``.yaml``/``.yml``, with the ``eval``
    extra's PyYAML). Raises :class:`EvalSetError` naming the file and what is wrong."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise EvalSetError(f"{path}: cannot read it: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise EvalSetError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start}): save it as UTF-8") from None
    try:
        if path.suffix in (".yaml", ".yml"):
            data = _yaml(text, path)
        else:
            data = json.loads(text, object_pairs_hook=_no_duplicates)
    except (json.JSONDecodeError, ValueError) as e:
        raise EvalSetError(f"{path}: not valid {'YAML' if path.suffix in ('.yaml', '.yml') else 'JSON'}: {e}") from e
    try:
        return EvalSet.model_validate(data)
    except ValidationError as e:
        raise EvalSetError(f"{path}: not an eval set: {_problems(e)}") from None


def _problems(e: ValidationError) -> str:
    """The errors of ``e``, one ``where: what`` each, but a list's "should have at least 1 item"
    caused by an item that failed (pydantic drops the bad item, then counts: "cases: at least 1
    item, not 0" for a set of two cases, one with a typo)."""
    errors = e.errors()
    locs = [tuple(err["loc"]) for err in errors]
    kept = [
        err
        for err in errors
        if not (
            err["type"] == "too_short"
            and any(len(o) > len(err["loc"]) and o[: len(err["loc"])] == tuple(err["loc"]) for o in locs)
        )
    ]
    return "; ".join(f"{'.'.join(str(p) for p in err['loc']) or 'top'}: {err['msg']}" for err in kept)


def _yaml(text: str, path: Path) -> Any:
    try:
        import yaml  # type: ignore[import-untyped]  # optional: the `eval` extra (no stubs installed)
    except ImportError:
        raise EvalSetError(
            f"{path}: reading YAML needs PyYAML: pip install 'rillet[eval]' (or write the eval set as JSON)"
        ) from None

    class Loader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML has no stubs here
        """SafeLoader refusing a key given twice in one mapping (PyYAML keeps the last)."""

    def mapping(loader: Any, node: Any, deep: bool = False) -> dict[Any, Any]:
        data: dict[Any, Any] = {}
        for k, v in node.value:
            key = loader.construct_object(k, deep=deep)
            if key in data:
                where = f"line {k.start_mark.line + 1}, column {k.start_mark.column + 1}"
                raise ValueError(f"the key {key!r} is given twice in one object ({where})")
            data[key] = loader.construct_object(v, deep=deep)
        return data

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    try:
        return yaml.load(text, Loader=Loader)  # a SafeLoader, with one constructor more
    except yaml.YAMLError as e:
        raise ValueError(str(e)) from e


def _no_duplicates(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    """An object of ``pairs``; ValueError for a key given twice (JSON and YAML readers keep the
    last one: a case's second ``answer`` would silently drop the first one's checks)."""
    data: dict[Any, Any] = {}
    for key, value in pairs:
        if key in data:
            raise ValueError(f"the key {key!r} is given twice in one object")
        data[key] = value
    return data


def schema_text() -> str:
    """The text of the shipped schema file: :func:`eval_set_schema` as indented JSON."""
    return json.dumps(eval_set_schema(), indent=2, ensure_ascii=False) + "\n"


def write_schema() -> None:
    """Writes the shipped schema file again (after changing the models; tests/eval checks it)."""
    SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")
