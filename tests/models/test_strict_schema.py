"""Strict response formats: rillet's strict JSON schema matches the OpenAI SDK's for pydantic classes,
a response_format given as a class is sent strict, and what cannot be read is refused."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rillet import Message


def _strict_models() -> list[Any]:
    import enum
    from typing import Annotated, Literal, Optional, Union

    from pydantic import BaseModel, Field

    class Color(enum.Enum):
        RED = "red"
        BLUE = "blue"

    class Point(BaseModel):
        x: float
        y: float = 0.0

    class Tag(BaseModel):
        """A label."""

        name: str = Field(description="the label's text")
        weight: int = 1

    class Shape(BaseModel):
        kind: Literal["circle", "square"]
        color: Color = Color.RED
        center: Point = Field(description="where it is")  # a $ref with a sibling: inlined
        corners: list[Point] = []
        tags: Optional[list[Tag]] = None
        label: str | None = None
        nested: dict[str, int] = {}

    class Node(BaseModel):  # recursive: the $ref stays
        value: int
        children: list[Node] = []

    class Cat(BaseModel):
        pet: Literal["cat"]
        meows: int

    class Dog(BaseModel):
        pet: Literal["dog"]
        barks: float

    class Owner(BaseModel):
        pet: Union[Cat, Dog] = Field(discriminator="pet")
        other: Annotated[Union[Cat, Dog, None], Field(description="a second pet")] = None
        best: Optional[Point] = Field(default=None, description="a favourite spot")
        scores: list[list[int]]
        mood: Color

    return [Point, Tag, Shape, Node, Owner]


@pytest.mark.parametrize("index", range(5))
def test_strict_schemas_match_the_openai_sdk(index: int) -> None:
    pytest.importorskip("openai")
    from openai.lib._pydantic import to_strict_json_schema
    from rillet.models.strict_schema import strict_json_schema

    model = _strict_models()[index]
    raw = model.model_json_schema()
    before = json.dumps(raw)
    assert strict_json_schema(raw) == to_strict_json_schema(model)
    assert json.dumps(raw) == before  # the input is not changed


def test_response_format_from_a_pydantic_class_is_strict() -> None:
    from rillet.models.openai import OpenAIChatModel

    owner = _strict_models()[4]
    body = OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1").request_body(
        [Message.user("hi")], None, {"response_format": owner}, stream=False
    )
    fmt = body["response_format"]["json_schema"]
    assert fmt["strict"] is True and fmt["name"] == "Owner"
    schema = fmt["schema"]
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["pet", "other", "best", "scores", "mood"]
    best = schema["properties"]["best"]
    assert "default" not in best and best["description"] == "a favourite spot"
    assert all(d["additionalProperties"] is False for d in schema["$defs"].values() if d.get("type") == "object")


def test_strict_schema_refuses_what_it_cannot_read() -> None:
    from rillet.models.strict_schema import strict_json_schema

    with pytest.raises(ValueError, match="only local references"):
        strict_json_schema({"type": "object", "properties": {"a": {"$ref": "http://x/y", "description": "d"}}})
    with pytest.raises(ValueError, match="reference '#/\\$defs/Missing' points at nothing"):
        strict_json_schema({"properties": {"a": {"$ref": "#/$defs/Missing", "description": "d"}}})
    with pytest.raises(TypeError, match="the schema at #/properties/a is a list"):
        strict_json_schema({"properties": {"a": []}})
