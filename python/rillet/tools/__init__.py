"""Tools: what a ChatModelAgent lets its model call.

A tool is a :class:`BaseTool`: a :class:`ToolInfo` (name, description and the JSON schema of
its parameters, which the model is shown) and ``invoke(arguments)``, which takes the model's
JSON arguments text and returns the result text. Most tools are plain Python functions::

    @tool
    def add(a: int, b: int) -> int:
        \"\"\"Adds two integers.

        Args:
            a: The first addend.
            b: The second addend.
        \"\"\"
        return a + b

The schema comes from the type hints (through pydantic, imported on first use) and the
parameter descriptions from the docstring (Google ``Args:``, NumPy ``Parameters`` or Sphinx
``:param x:`` style); the docstring's text before its sections is the tool's description.

Rules a function tool follows:

* Arguments are validated before the call: bad JSON, a JSON value that is not an object, a
  missing or mistyped argument raise :class:`ToolArgumentsError` naming the tool and each
  problem. An empty arguments string means no arguments. An argument the function does not
  take is an error too (``argument 'x': unknown; the tool takes: a, b``): the agent sends it
  to the model as the call's result, as for any bad argument, so the model can correct it.
* A function without a docstring (and no ``description=``) gets an empty description, with a
  ``UserWarning`` naming the tool when it is made: the model chooses tools by description.
* A parameter without an annotation accepts any JSON value (``Any``). ``self``/``cls``
  parameters, ``*args`` and ``**kwargs`` are refused when the tool is made.
* ``def`` functions run on rillet's worker threads, with a copy of the caller's contextvars,
  so :func:`rillet.run.context.get_session_value`, :func:`rillet.run.context.send_tool_gen_action`
  and the like work in them; several calls run at once. ``async def`` functions run on the
  event loop.
* A function returning an iterator or async iterator (a generator, or annotated ``Iterator``,
  ``Generator``, ``AsyncIterator`` or ``AsyncGenerator``) is a streaming tool: ``stream()``
  yields one text chunk per item; ``invoke()`` joins them. Sync generators are advanced on the
  worker threads.
* A str result is returned as is; anything else is JSON-encoded (``ensure_ascii=False``;
  pydantic models through ``model_dump(mode="json")``, dataclasses through ``asdict``; dates,
  enums, sets and the like as pydantic encodes them). ``None`` becomes ``"null"``.
* A :class:`rillet.ContentPart` result (an image or a file), or a list of str and
  ContentPart items, is returned as the text items (joined by newlines) with the image and
  file parts attached to the call's tool message (:func:`rillet.run.context.send_tool_parts`);
  called outside an agent's tool call, ``invoke()`` returns the parts' dicts as JSON.
* An exception raised by the function propagates unchanged. An interrupt (``rillet.interrupt(...)``)
  returned instead of raised, or yielded by a streaming tool, is raised as if the tool had raised it.

Layer: tools, with :mod:`.approval` (human approval of tool calls). May import rillet.run and the
layers under it (the import-linter contract in pyproject.toml; docs/architecture.md); not the flow
or anything above.
"""

from __future__ import annotations

import abc
import collections.abc
import contextlib
import contextvars
import dataclasses
import functools
import inspect
import json
import re
import threading
import types
import typing
import warnings
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, overload

from rillet._core.workers import Pace, default_pool
from rillet._native import ContentPart
from rillet.data.events import new_exit_action
from rillet.errors import Interrupted, ToolArgumentsError
from rillet.run.context import current_tool_call, send_tool_gen_action, send_tool_parts

__all__ = [
    "BaseTool",
    "ExitTool",
    "FunctionTool",
    "ToolArgumentsError",
    "ToolInfo",
    "as_tool",
    "exit_tool",
    "tool",
]


@dataclass(frozen=True)
class ToolInfo:
    """What the model is told about a tool.

    ``parameters`` is a JSON schema object,
    ``{"type": "object", "properties": {...}, "required": [...]}``; treat it as read-only.
    """

    name: str
    description: str
    parameters: dict[str, Any]

    def to_openai(self) -> dict[str, Any]:
        """The tool in the OpenAI chat-completions ``tools`` format."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


class BaseTool(abc.ABC):
    """A tool a ChatModelAgent can execute.

    Subclasses set ``info`` (a :class:`ToolInfo`, as an attribute or a property) and implement
    ``invoke``. A tool whose output comes in pieces sets ``is_streaming = True`` and overrides
    ``stream``; the agent then calls ``stream`` instead of ``invoke``.
    """

    info: ToolInfo
    is_streaming: bool = False

    @abc.abstractmethod
    async def invoke(self, arguments: str) -> str:
        """Runs the tool on ``arguments`` (the model's JSON text) and returns the result text."""

    async def stream(self, arguments: str) -> AsyncIterator[str]:
        """Runs the tool, yielding the result in chunks. The default yields ``invoke()``."""
        yield await self.invoke(arguments)

    def __repr__(self) -> str:
        info = getattr(self, "info", None)
        return f"<{type(self).__name__} {info.name if info is not None else '?'}>"


# --- arguments --------------------------------------------------------------------------


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def load_arguments(tool_name: str, arguments: str) -> dict[str, Any]:
    """The model's arguments text as a dict ("" and whitespace mean {})."""
    if not isinstance(arguments, str):
        raise TypeError(f"tool {tool_name!r}: arguments must be the JSON text (str), got {type(arguments).__name__}")
    if not arguments.strip():
        return {}
    try:
        data = json.loads(arguments)
    except json.JSONDecodeError as e:
        raise ToolArgumentsError(tool_name, [f"arguments are not valid JSON ({e}): {_short(arguments)}"]) from None
    if not isinstance(data, dict):
        raise ToolArgumentsError(
            tool_name, [f"arguments must be a JSON object of named arguments, got {type(data).__name__} {_short(data)}"]
        )
    return data


def _loc_path(loc: tuple[int | str, ...]) -> str:
    path = str(loc[0]) if loc else ""
    for part in loc[1:]:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def argument_problems(errors: list[Any], params: tuple[str, ...] = ()) -> list[str]:
    """One line per pydantic error: the argument, what was expected and what was given."""
    out = []
    unknown = [repr(str(e["loc"][0])) for e in errors if e["type"] == "extra_forbidden" and len(e["loc"]) == 1]
    if unknown:
        what = "argument" if len(unknown) == 1 else "arguments"
        out.append(f"{what} {', '.join(unknown)}: unknown; the tool takes: {', '.join(params) or 'no arguments'}")
    for err in errors:
        where = f"argument {_loc_path(tuple(err['loc']))!r}"
        if err["type"] == "extra_forbidden" and len(err["loc"]) == 1:
            continue
        if err["type"] == "missing":
            out.append(f"{where}: required, but missing")
        else:
            msg = err["msg"]
            given = f" (got {_short(err['input'])})" if "got" in msg else f", got {_short(err['input'])}"
            out.append(f"{where}: {msg}{given}")
    return out


# --- schemas ----------------------------------------------------------------------------

# JSON-schema keywords whose values are schemas (or maps/lists of schemas): where "title" is
# pydantic's noise. Data keywords (default, enum, const, examples) are left alone.
_SCHEMA_MAPS = ("properties", "$defs", "patternProperties")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONES = ("items", "additionalProperties", "not", "contains")


def _strip_titles(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    out = {k: v for k, v in node.items() if not (k == "title" and isinstance(v, str))}
    for key in _SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: _strip_titles(sub) for name, sub in out[key].items()}
    for key in _SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [_strip_titles(sub) for sub in out[key]]
    for key in _SCHEMA_ONES:
        if key in out:
            out[key] = _strip_titles(out[key])
    return out


_STREAM_SYNC = (collections.abc.Iterator, collections.abc.Generator)
_STREAM_ASYNC = (collections.abc.AsyncIterator, collections.abc.AsyncGenerator)


def _described(annotation: Any) -> bool:
    """Whether ``Annotated[..., Field(description=...)]`` describes the parameter already
    (an explicit Field wins over the docstring)."""
    from pydantic.fields import FieldInfo  # imported on first use: `import rillet` does not load pydantic

    return typing.get_origin(annotation) is typing.Annotated and any(
        isinstance(m, FieldInfo) and m.description for m in annotation.__metadata__
    )


def _hint_target(fn: Callable[..., Any]) -> Any:
    """The object whose annotations describe calling ``fn``."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.isroutine(fn):
        return fn
    return type(fn).__call__


# --- results ----------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    import pydantic  # imported on first use: `import rillet` does not load pydantic
    import pydantic_core  # as pydantic

    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return pydantic_core.to_jsonable_python(value)


_encoder: json.JSONEncoder | None = None  # made on first use (json.dumps with options makes one a call)


def _encode(tool_name: str, value: Any) -> str:
    """A tool result as text: a str as is, anything else as JSON. A returned interrupt is
    raised, as if the tool had raised it (an Eino tool returns its interrupt as its error)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Interrupted):
        raise value
    if isinstance(value, ContentPart) or (
        type(value) in (list, tuple) and any(isinstance(v, ContentPart) for v in value)
    ):
        return _with_parts(tool_name, value)
    global _encoder
    if _encoder is None:
        _encoder = json.JSONEncoder(ensure_ascii=False, default=_jsonable)
    try:
        return _encoder.encode(value)
    except Exception as e:  # TypeError, ValueError (a cycle), pydantic_core.PydanticSerializationError
        raise TypeError(
            f"tool {tool_name!r} returned a {type(value).__name__} that cannot be encoded as JSON ({e}); "
            "return a str, or JSON-encodable data (dict, list, number, bool, None, a pydantic model, a dataclass)"
        ) from e


def encode_result(tool_name: str, value: Any) -> str:
    """A tool result as the model gets it (what a function tool's return value becomes): a
    str as is, anything else as JSON; for callbacks that give a call its result."""
    return _encode(tool_name, value)


def _with_parts(tool_name: str, value: ContentPart | list[Any] | tuple[Any, ...]) -> str:
    """A result with content parts: its text, the image and file parts sent with the call's
    tool message (outside a tool call, where nothing carries them, all of it as JSON)."""
    items = [value] if isinstance(value, ContentPart) else list(value)
    texts: list[str] = []
    media: list[ContentPart] = []
    for item in items:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, ContentPart) and item.type == "text":
            texts.append(item.text or "")
        elif isinstance(item, ContentPart):
            media.append(item)
        else:
            raise TypeError(
                f"tool {tool_name!r} returned a list of ContentPart and {type(item).__name__}: "
                "a result with content parts holds str and ContentPart items only"
            )
    if current_tool_call() is None:
        return json.dumps([i.to_dict() if isinstance(i, ContentPart) else i for i in items], ensure_ascii=False)
    send_tool_parts(*media)
    return "\n".join(texts)


def _apply(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        return fn(*args, **kwargs)
    except StopIteration as e:  # would end the awaiting coroutine's frame instead (PEP 479)
        raise RuntimeError(f"tool function {getattr(fn, '__qualname__', fn)!s} raised StopIteration") from e


_DONE = object()


class _SyncSteps:
    """A sync iterator advanced on worker threads, one step at a time, in one context."""

    __slots__ = ("ctx", "it", "lock")

    def __init__(self, it: Iterator[Any]) -> None:
        self.it = it
        self.ctx = contextvars.copy_context()
        self.lock = threading.Lock()  # a close may be queued while a step still runs

    def step(self) -> Any:
        with self.lock:
            return next(self.it, _DONE)

    def close(self) -> None:
        close = getattr(self.it, "close", None)
        if close is not None:
            with self.lock:
                close()


async def _chunks(result: Any) -> AsyncGenerator[Any, None]:
    """The items of an async or sync iterator (sync ones advanced on worker threads)."""
    if isinstance(result, collections.abc.AsyncIterator):
        closer: contextlib.AbstractAsyncContextManager[Any] = (
            contextlib.aclosing(result) if hasattr(result, "aclose") else contextlib.nullcontext(result)
        )
        async with closer:
            async for item in result:
                yield item
        return
    steps = _SyncSteps(result)
    pool = default_pool()
    done = False
    try:
        while True:
            item = await pool.run_in(steps.ctx, steps.step)
            if item is _DONE:
                done = True
                return
            yield item
    finally:
        if not done:
            # A copy: a cancelled step may still be running in steps.ctx (the lock orders them).
            pool.submit_detached(steps.ctx.copy(), steps.close)


_PLAIN = frozenset({str, int, float, bool, dict, list, tuple, type(None)})


def _is_stream(value: Any) -> bool:
    if type(value) in _PLAIN:  # the common results, without two ABC checks per call
        return False
    return isinstance(value, collections.abc.AsyncIterator) or (
        isinstance(value, collections.abc.Iterator) and not isinstance(value, (str, bytes))
    )


# --- making a function tool: what is checked at once, what is built on first use ---------

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}").fullmatch


def _usable_name(name: str) -> bool:
    return _NAME(name) is not None


def _parameters(name: str, fn: Callable[..., Any]) -> list[tuple[str, str]]:
    """``fn``'s parameters as (name, "" or "*" or "**"), in the order of its signature. A plain
    function's (or a method's) are read off its code object, as ``inspect.signature`` would
    report them, for a tenth of the cost; anything else asks ``inspect.signature``."""
    func, skip = fn, 0
    if type(fn) is types.MethodType:
        func, skip = fn.__func__, 1
    if type(func) is types.FunctionType and not {"__wrapped__", "__signature__"} & func.__dict__.keys():
        code = func.__code__
        names, n, k, flags = code.co_varnames, code.co_argcount, code.co_kwonlyargcount, code.co_flags
        out = [(v, "") for v in names[skip:n]]
        i = n + k  # co_varnames: positional, keyword-only, then *args and **kwargs
        if flags & inspect.CO_VARARGS:
            out.append((names[i], "*"))
            i += 1
        out.extend((v, "") for v in names[n : n + k])
        if flags & inspect.CO_VARKEYWORDS:
            out.append((names[i], "**"))
        return out
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as e:
        raise TypeError(f"tool {name!r}: cannot read the signature of {fn!r}: {e}") from e
    stars: dict[Any, str] = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    return [(p.name, stars.get(p.kind, "")) for p in sig.parameters.values()]


def _refuse_parameters(name: str, fn: Callable[..., Any]) -> None:
    """Refuses what a model cannot call: ``self``/``cls`` parameters, ``*args``, ``**kwargs``."""
    if type(fn) is types.FunctionType and not fn.__dict__:  # the common case, in a few checks
        code = fn.__code__
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        if not code.co_flags & _STARS and "self" not in names and "cls" not in names:
            return
    for pname, star in _parameters(name, fn):
        if pname in ("self", "cls"):
            raise TypeError(
                f"tool {name!r}: parameter {pname!r}: a tool is a plain function; for a method, "
                "make the tool from the bound method (FunctionTool(obj.method)) or a static method"
            )
        if star:
            raise TypeError(
                f"tool {name!r}: parameter {star}{pname} is not supported: the model passes named "
                "arguments, so declare each one as its own parameter"
            )


_STARS = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


def _docs(fn: Callable[..., Any]) -> tuple[str | None, str | None]:
    """The docstring that describes ``fn``, and the one to fall back on (a partial's or a
    callable object's own) when the first has no summary."""
    target = _hint_target(fn)
    if target is fn:
        return fn.__doc__, None
    return inspect.getdoc(target), getattr(fn, "__doc__", None)


def _has_doc(fn: Callable[..., Any]) -> bool:
    if type(fn) is types.FunctionType:  # the common case, without _docs' checks
        doc = fn.__doc__
        return doc is not None and doc != "" and not doc.isspace()
    return any(d and not d.isspace() for d in _docs(fn))


def _warn_undescribed(name: str, stacklevel: int) -> None:
    warnings.warn(
        f"tool {name!r} has no description (no docstring): the model chooses tools by their "
        "description; add a docstring to the function or pass description=... to tool()",
        stacklevel=stacklevel,
    )


@dataclass(frozen=True, slots=True)
class _Spec:
    """What a function tool's first use builds: its description and schema, the pydantic
    model that validates its arguments, and how to call it."""

    description: str
    parameters: dict[str, Any]
    model: Any  # the pydantic model of the arguments
    validation_error: Any  # pydantic.ValidationError (pydantic is imported on first use)
    params: tuple[str, ...]  # the parameter names, named in an unknown-argument error
    positional: tuple[str, ...]
    keywords: tuple[tuple[str, str], ...]
    is_async: bool
    is_streaming: bool
    # how its def calls went, shared by every tool made from the function: whether to wait for them
    pace: Pace = field(default_factory=Pace)


def _build_spec(fn: Callable[..., Any], name: str, description: str | None) -> _Spec:
    import pydantic  # imported on first use: `import rillet` does not load pydantic

    from rillet.tools._docstrings import parse_docstring  # its regular expressions compile on first use

    target = _hint_target(fn)
    doc, fallback = _docs(fn)
    summary, param_docs = parse_docstring(doc)
    if fallback is not None and not summary:
        summary, param_docs = parse_docstring(fallback)
    if description is None and not summary and _has_doc(fn):  # (no docstring at all: warned when made)
        _warn_undescribed(name, stacklevel=5)
    try:
        hints = typing.get_type_hints(target, include_extras=True)
    except Exception as e:
        raise TypeError(
            f"tool {name!r}: cannot resolve the type hints of {fn!r}: {e} (the schema is built on the tool's "
            "first use; define or import every name its annotations use before then)"
        ) from e
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as e:
        raise TypeError(f"tool {name!r}: cannot read the signature of {fn!r}: {e}") from e

    fields: dict[str, Any] = {}
    positional: list[str] = []
    keywords: list[tuple[str, str]] = []
    for i, p in enumerate(sig.parameters.values()):
        field = f"p{i}"
        annotation = hints.get(p.name, Any)
        kw: dict[str, Any] = {"alias": p.name}
        if param_docs.get(p.name) and not _described(annotation):
            kw["description"] = param_docs[p.name]
        default = ... if p.default is p.empty else p.default
        fields[field] = (annotation, pydantic.Field(default, **kw))
        if p.kind is p.POSITIONAL_ONLY:
            positional.append(field)
        else:
            keywords.append((field, p.name))
    try:
        model = pydantic.create_model(
            f"{name}_arguments",
            __config__=pydantic.ConfigDict(extra="forbid", protected_namespaces=()),
            **fields,
        )
        raw = model.model_json_schema()
    except pydantic.PydanticUserError as e:
        raise TypeError(
            f"tool {name!r}: cannot build the JSON schema of its parameters (built on the tool's first use): {e}"
        ) from e

    schema: dict[str, Any] = {
        "type": "object",
        "properties": {k: _strip_titles(v) for k, v in raw.get("properties", {}).items()},
        "required": list(raw.get("required", [])),
    }
    if "$defs" in raw:
        schema["$defs"] = {k: _strip_titles(v) for k, v in raw["$defs"].items()}
    ret = typing.get_origin(hints.get("return")) or hints.get("return")
    return _Spec(
        description=summary if description is None else description,
        parameters=schema,
        model=model,
        validation_error=pydantic.ValidationError,
        params=tuple(sig.parameters),
        positional=tuple(positional),
        keywords=tuple(keywords),
        is_async=inspect.iscoroutinefunction(target) or inspect.isasyncgenfunction(target),
        is_streaming=(
            inspect.isgeneratorfunction(target)
            or inspect.isasyncgenfunction(target)
            or ret in _STREAM_SYNC
            or ret in _STREAM_ASYNC
        ),
    )


class _Slot:
    """Where one (function, name, description)'s spec is built, once: the lock orders the
    threads that first use it at the same time; the spec is published only when whole."""

    __slots__ = ("lock", "spec")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.spec: _Spec | None = None

    def get(self, fn: Callable[..., Any], name: str, description: str | None) -> _Spec:
        spec = self.spec
        if spec is None:
            with self.lock:
                spec = self.spec
                if spec is None:  # a failed build leaves it None: the next use tries again
                    spec = self.spec = _build_spec(fn, name, description)
        return spec


# Specs per function (weakly: a function's entry goes with it), so tools made again and again
# from one function (``tools=[tool(fn)]`` in a loop) build its schema once.
_slots: weakref.WeakKeyDictionary[Any, dict[tuple[str, str | None], _Slot]] = weakref.WeakKeyDictionary()
_slots_lock = threading.Lock()


def _slot(fn: Callable[..., Any], key: tuple[str, str | None]) -> _Slot | None:
    with _slots_lock:
        try:
            by_key = _slots.get(fn)
            if by_key is None:
                by_key = _slots[fn] = {}
        except TypeError:  # not hashable or not weakly referenceable: the tool keeps its own
            return None
        slot = by_key.get(key)
        if slot is None:
            slot = by_key[key] = _Slot()
        return slot


class _LazyInfo(ToolInfo):
    """A function tool's :class:`ToolInfo`: the name at once, the description and parameters
    built on first read (an ordinary ToolInfo to compare, copy and pickle)."""

    @classmethod
    def of(cls, fn: Callable[..., Any], name: str, description: str | None) -> _LazyInfo:
        # ToolInfo is frozen; description and parameters are set by spec(), on first read
        info = object.__new__(cls)
        info.__dict__.update(name=name, _fn=fn, _description=description)
        return info

    def spec(self) -> _Spec:
        spec: _Spec | None = self.__dict__.get("_spec")
        if spec is not None:
            return spec
        fn, name, description = self.__dict__["_fn"], self.name, self.__dict__["_description"]
        slot = _slot(fn, (name, description))
        if slot is None:
            with _slots_lock:
                slot = self.__dict__.setdefault("_own_slot", _Slot())
        spec = slot.get(fn, name, description)
        object.__setattr__(self, "_spec", spec)
        object.__setattr__(self, "description", spec.description)
        object.__setattr__(self, "parameters", spec.parameters)
        return spec

    def __getattr__(self, attr: str) -> Any:
        if attr in ("description", "parameters") and "_fn" in self.__dict__:
            return getattr(self.spec(), attr)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {attr!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ToolInfo):
            return NotImplemented
        return (self.name, self.description, self.parameters) == (other.name, other.description, other.parameters)

    __hash__ = ToolInfo.__hash__

    def __repr__(self) -> str:
        return f"ToolInfo(name={self.name!r}, description={self.description!r}, parameters={self.parameters!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (ToolInfo, (self.name, self.description, self.parameters))


def build_schemas(infos: Iterable[ToolInfo]) -> None:
    """Builds the schemas of the lazily described tools among ``infos`` now (an agent does at
    the start of its run, so a tool that cannot be described fails there, not in the model)."""
    for info in infos:
        if type(info) is _LazyInfo and "_fn" in info.__dict__:
            info.spec()


_WRAPPER_ASSIGNMENTS = ("__module__", "__name__", "__qualname__", "__doc__")


class FunctionTool(BaseTool):
    """A tool made from a Python function (``def``, ``async def`` or a generator of either).

    ``name`` defaults to the function's name and ``description`` to its docstring's text
    before the parameter section. Making the tool only records the function and checks what
    is cheap to check (a callable, a usable name, no ``self``/``cls``, ``*args`` or
    ``**kwargs``): the docstring is parsed and the pydantic model and JSON schema built on
    first use (reading ``info.description`` or ``info.parameters``, a call, or the start of an
    agent's run), once per function, name and description. So a parameter type that has no
    JSON schema, or a hint that does not resolve, raises ``TypeError`` there, naming the tool.
    Calling the tool object calls the function directly.

    A ``def`` function runs on a worker thread; the event loop waits for its result (up to
    1 ms) instead of going back to other runs' work, until the function has run longer than
    100 µs four times (counted for the function, across every tool made from it; 64 quick
    calls in a row take one off), and not while another call of it is past that wait: such a
    function is then only awaited. ``inline=True`` runs a ``def`` function on the event loop itself,
    in a copy of the context (no thread hand-off at all): only for functions that return in
    microseconds, since the loop and every run on it wait for them.
    """

    _built: _Spec | None = None  # the spec, once built (the instance's own copy: one lookup a call)
    inline = False

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        inline: bool = False,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"FunctionTool needs a function, got {type(fn).__name__} {_short(fn)}")
        if name is None:
            name = getattr(fn, "__name__", None) or type(fn).__name__
        if not isinstance(name, str) or not _usable_name(name):
            raise ValueError(
                f"tool name {name!r} is not usable: a tool name is 1 to 64 letters, digits, '_' or '-' "
                "(pass name=... to tool() or FunctionTool)"
            )
        _refuse_parameters(name, fn)
        if description is None and not _has_doc(fn):
            _warn_undescribed(name, stacklevel=4)
        self.fn = fn
        if inline:
            self.inline = True
        self._lazy = self.info = _LazyInfo.of(fn, name, description)
        if type(fn) is types.FunctionType:  # what update_wrapper does, in one call
            self.__dict__.update(
                __module__=fn.__module__,
                __name__=fn.__name__,
                __qualname__=fn.__qualname__,
                __doc__=fn.__doc__,
                __wrapped__=fn,
            )
        else:
            functools.update_wrapper(self, fn, assigned=_WRAPPER_ASSIGNMENTS, updated=())

    def _spec(self) -> _Spec:
        spec = self._built
        if spec is None:
            spec = self._built = self._lazy.spec()
        return spec

    @property
    def is_streaming(self) -> bool:  # type: ignore[override]  # read-only: it comes from the function
        return self._spec().is_streaming

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Calls the function directly (no validation, no thread)."""
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<FunctionTool {self.info.name}>"

    def _parse(self, arguments: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
        spec = self._built or self._spec()
        validator = spec.model.__pydantic_validator__
        try:
            if isinstance(arguments, str) and arguments and not arguments.isspace():
                values = validator.validate_json(arguments).__dict__  # parsed and checked in one pass
            else:
                values = validator.validate_python(load_arguments(self.info.name, arguments)).__dict__
        except spec.validation_error as e:
            errors = e.errors()
            if errors and not errors[0]["loc"]:  # not JSON, or not an object: say it as json does
                load_arguments(self.info.name, arguments)
            raise ToolArgumentsError(self.info.name, argument_problems(errors, spec.params)) from None
        return tuple(values[f] for f in spec.positional), {p: values[f] for f, p in spec.keywords}

    async def _call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        spec = self._built or self._spec()
        if spec.is_async:
            result = self.fn(*args, **kwargs)
        elif self.inline:
            result = contextvars.copy_context().run(_apply, self.fn, args, kwargs)
        else:
            result = await default_pool().run_waiting(_apply, self.fn, args, kwargs, pace=spec.pace)
        if inspect.isawaitable(result):
            result = await result
        return result

    async def invoke(self, arguments: str) -> str:
        """Validates ``arguments``, calls the function and returns its result as text (a
        streaming tool's chunks joined)."""
        args, kwargs = self._parse(arguments)
        result = await self._call(args, kwargs)
        if _is_stream(result):
            return "".join([_encode(self.info.name, item) async for item in _chunks(result)])
        return _encode(self.info.name, result)

    async def stream(self, arguments: str) -> AsyncIterator[str]:
        """Validates ``arguments``, calls the function and yields its items as text chunks
        (one chunk, the whole result, for a function that does not stream)."""
        args, kwargs = self._parse(arguments)
        result = await self._call(args, kwargs)
        if not _is_stream(result):
            yield _encode(self.info.name, result)
            return
        gen = _chunks(result)
        async with contextlib.aclosing(gen):
            async for item in gen:
                yield _encode(self.info.name, item)


@overload
def tool(
    fn: Callable[..., Any], /, *, name: str | None = None, description: str | None = None, inline: bool = False
) -> FunctionTool: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None, inline: bool = False
) -> Callable[[Callable[..., Any]], FunctionTool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    inline: bool = False,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Makes a :class:`FunctionTool` of a function: ``@tool`` or
    ``@tool(name="...", description="...")``; ``inline=True`` runs a ``def`` function on the
    event loop instead of a worker thread (see :class:`FunctionTool`)."""
    if fn is None:
        return lambda f: FunctionTool(f, name=name, description=description, inline=inline)
    return FunctionTool(fn, name=name, description=description, inline=inline)


def as_tool(obj: Any) -> BaseTool:
    """``obj`` as a tool: a :class:`BaseTool` as is, a function as a :class:`FunctionTool`."""
    if isinstance(obj, BaseTool):
        return obj
    if isinstance(obj, type):
        hint = " (instantiate it)" if issubclass(obj, BaseTool) else ""
        raise TypeError(
            f"as_tool() got the class {obj.__qualname__}{hint}: it accepts a BaseTool instance or a function"
        )
    if callable(obj):
        return FunctionTool(obj)
    if callable(getattr(obj, "tools", None)):  # a toolset (rillet.tools.toolset): an agent resolves it per run
        raise TypeError(
            f"as_tool() got the toolset {type(obj).__name__} {_short(obj)}: put it in ChatModelAgent(tools=[...]), "
            "which asks it for its tools at the start of every run, or list them with `await toolset.tools()`"
        )
    if callable(getattr(obj, "get_tools", None)):  # Google ADK Python's BaseToolset
        raise TypeError(
            f"as_tool() got {type(obj).__name__} {_short(obj)}, which has Google ADK's get_tools(); a rillet "
            "toolset defines async def tools(self) -> list[BaseTool] (rillet.Toolset), which rillet calls at the "
            "start of every run"
        )
    raise TypeError(f"as_tool() got {type(obj).__name__} {_short(obj)}: it accepts a BaseTool instance or a function")


class ExitTool(BaseTool):
    """The tool that ends the run: the model calls ``exit`` with its ``final_result``.

    Invoking it attaches an exit action to the tool's event
    (:func:`rillet.run.context.send_tool_gen_action`) and returns ``final_result``."""

    def __init__(self) -> None:
        self.info = ToolInfo(
            "exit",
            "Ends the task and returns the final result. Call it once the task is done.",
            {
                "type": "object",
                "properties": {"final_result": {"type": "string", "description": "The final result of the task."}},
                "required": ["final_result"],
            },
        )

    async def invoke(self, arguments: str) -> str:
        data = load_arguments(self.info.name, arguments)
        if "final_result" not in data:
            raise ToolArgumentsError(self.info.name, ["argument 'final_result': required, but missing"])
        final_result = data["final_result"]
        if not isinstance(final_result, str):
            raise ToolArgumentsError(
                self.info.name, [f"argument 'final_result': Input should be a valid string, got {_short(final_result)}"]
            )
        send_tool_gen_action(new_exit_action())
        return final_result


exit_tool = ExitTool()
