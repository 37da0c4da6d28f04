"""Schema derivation, naming rules and Tool construction."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from jianmu_like.tools import Tool, ToolArgumentsError, tool, validate_tool_name
from jianmu_like.tools._errors import ToolError


class Point(BaseModel):
    """A point in the plane."""

    x: float
    y: float = 0.0


class Query(BaseModel):
    text: str
    limit: int = 10


def _walk(node: Any) -> list[dict[str, Any]]:
    """Every schema dict below `node` (property maps included)."""
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        found.append(node)
        for value in node.values():
            found.extend(_walk(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_walk(value))
    return found


def test_types_defaults_and_required() -> None:
    def search(query: str, limit: int = 5, exact: bool = False, ratio: float = 0.5) -> str:
        return query

    params = Tool.from_function(search).parameters
    assert params["type"] == "object"
    assert params["required"] == ["query"]
    props = params["properties"]
    assert props["query"] == {"type": "string"}
    assert props["limit"] == {"type": "integer", "default": 5}
    assert props["exact"] == {"type": "boolean", "default": False}
    assert props["ratio"] == {"type": "number", "default": 0.5}
    assert params["additionalProperties"] is False


def test_optional_list_dict_literal() -> None:
    def f(
        tags: list[str],
        meta: dict[str, int] | None = None,
        mode: Literal["fast", "slow"] = "fast",
        note: str | None = None,
    ) -> None:
        return None

    params = Tool.from_function(f).parameters
    props = params["properties"]
    assert params["required"] == ["tags"]
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert {"type": "object", "additionalProperties": {"type": "integer"}} in props["meta"]["anyOf"]
    assert {"type": "null"} in props["meta"]["anyOf"]
    assert props["mode"]["enum"] == ["fast", "slow"]
    assert props["note"]["anyOf"] == [{"type": "string"}, {"type": "null"}]


def test_nested_model_is_inlined_and_titles_dropped() -> None:
    def move(p: Point, steps: int) -> None:
        return None

    params = Tool.from_function(move).parameters
    assert "$defs" not in params
    assert params["properties"]["p"]["properties"]["x"] == {"type": "number"}
    assert params["properties"]["p"]["required"] == ["x"]
    assert all("title" not in node or not isinstance(node["title"], str) for node in _walk(params))


def test_property_named_title_survives_title_cleanup() -> None:
    def post(title: str, body: str = "") -> None:
        return None

    assert set(Tool.from_function(post).parameters["properties"]) == {"title", "body"}


def test_single_model_parameter_exposes_its_fields() -> None:
    received: list[Query] = []

    def search(q: Query) -> str:
        received.append(q)
        return q.text

    t = Tool.from_function(search)
    assert set(t.parameters["properties"]) == {"text", "limit"}
    assert t.parameters["required"] == ["text"]
    assert t.fn is search


async def test_single_model_parameter_receives_the_model() -> None:
    def search(q: Query) -> str:
        return f"{q.text}:{q.limit}"

    assert await Tool.from_function(search).invoke({"text": "hi"}) == "hi:10"


async def test_args_model_maps_fields_to_keywords() -> None:
    def area(x: float, y: float) -> float:
        return x * y

    t = Tool.from_function(area, args_model=Point)
    assert t.parameters["required"] == ["x"]
    assert t.description == "A point in the plane."
    assert await t.invoke({"x": 2, "y": 3}) == "6.0"


async def test_unresolvable_local_types_need_args_model() -> None:
    class Local(BaseModel):
        x: int

    def f(p: Local) -> int:  # with postponed annotations, "Local" cannot be resolved
        return p.x

    with pytest.raises(TypeError, match="cannot resolve the type hints"):
        Tool.from_function(f)
    assert await Tool.from_function(f, args_model=Local).invoke({"x": 3}) == "3"


def test_args_model_mismatch_is_explained() -> None:
    def area(width: float) -> float:
        return width

    with pytest.raises(TypeError, match="function has no parameter 'x'"):
        Tool.from_function(area, args_model=Point)


def test_docstring_summary_and_google_args() -> None:
    def add(a: int, b: int = 0) -> int:
        """Add two integers.

        Longer explanation that is not part of the summary.

        Args:
            a: The first addend,
                which can be negative.
            b (int): The second addend.

        Returns:
            The sum.
        """
        return a + b

    t = Tool.from_function(add)
    assert t.description == "Add two integers."
    props = t.parameters["properties"]
    assert props["a"]["description"] == "The first addend, which can be negative."
    assert props["b"]["description"] == "The second addend."


def test_sphinx_param_descriptions() -> None:
    def f(path: str) -> None:
        """Read a file.

        :param path: Where the file is.
        """

    assert Tool.from_function(f).parameters["properties"]["path"]["description"] == "Where the file is."


def _search_google(query: str, limit: int = 5) -> str:
    """Search the web.

    Args:
        query: What to look for,
            in plain words.
        limit: How many hits.
    """
    return query


def _search_numpy(query: str, limit: int = 5) -> str:
    """Search the web.

    Parameters
    ----------
    query : str
        What to look for,
        in plain words.
    limit : int, optional
        How many hits.

    Returns
    -------
    str
        The hits.
    """
    return query


def _search_rest(query: str, limit: int = 5) -> str:
    """Search the web.

    :param query: What to look for,
        in plain words.
    :type query: str
    :param limit: How many hits.
    :returns: The hits.
    """
    return query


def _search_epydoc(query: str, limit: int = 5) -> str:
    """Search the web.

    @param query: What to look for,
        in plain words.
    @type query: str
    @param limit: How many hits.
    @return: The hits.
    """
    return query


@pytest.mark.parametrize("fn", [_search_google, _search_numpy, _search_rest, _search_epydoc])
def test_every_docstring_style_describes_the_parameters(fn: Any) -> None:
    t = Tool.from_function(fn)
    assert t.description == "Search the web."
    props = t.parameters["properties"]
    assert props["query"]["description"] == "What to look for, in plain words."
    assert props["limit"]["description"] == "How many hits."


def test_a_summary_over_two_lines_is_kept_whole() -> None:
    def f(x: int) -> int:
        """Double a number
        and return it.

        Args:
            x: The number.
        """
        return 2 * x

    t = Tool.from_function(f)
    assert t.description == "Double a number and return it."
    assert t.parameters["properties"]["x"]["description"] == "The number."


def test_annotated_description_wins_over_docstring() -> None:
    def f(n: Annotated[int, Field(ge=0, description="explicit")] = 1) -> None:
        """Do it.

        Args:
            n: from the docstring
        """

    prop = Tool.from_function(f).parameters["properties"]["n"]
    assert prop["description"] == "explicit"
    assert prop["minimum"] == 0


def test_parameters_named_like_basemodel_attributes() -> None:
    def f(schema: str, json: int = 1, model_config: str = "") -> str:
        return f"{schema}{json}{model_config}"

    t = Tool.from_function(f)
    assert set(t.parameters["properties"]) == {"schema", "json", "model_config"}


def test_no_parameters() -> None:
    def ping() -> str:
        """Check liveness."""
        return "pong"

    assert Tool.from_function(ping).parameters == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


def test_variadic_only_signatures_are_rejected() -> None:
    def anything(*args: Any, **kwargs: Any) -> None:
        return None

    with pytest.raises(TypeError, match=r"\*args/\*\*kwargs"):
        Tool.from_function(anything)


def test_unbound_method_is_rejected_bound_method_works() -> None:
    class Box:
        def get(self, key: str) -> str:
            return key

    with pytest.raises(TypeError, match="unbound method"):
        Tool.from_function(Box.get)
    assert Tool.from_function(Box().get).parameters["required"] == ["key"]


@pytest.mark.parametrize("name", ["has space", "", "x" * 65, "dot.name", "é", "<lambda>"])
def test_invalid_names(name: str) -> None:
    with pytest.raises(ValueError, match="invalid tool name"):
        validate_tool_name(name)
    with pytest.raises(ValueError, match="invalid tool name"):
        Tool(name=name, fn=lambda: None)


def test_lambda_needs_an_explicit_name() -> None:
    with pytest.raises(ValueError, match="invalid tool name '<lambda>'"):
        Tool.from_function(lambda: None)
    assert Tool.from_function(lambda: None, name="noop").name == "noop"


@pytest.mark.parametrize("name", ["a", "get-weather", "Tool_2", "x" * 64])
def test_valid_names(name: str) -> None:
    assert validate_tool_name(name) == name


def test_decorator_forms_and_direct_call() -> None:
    @tool
    def double(x: int) -> int:
        """Double it."""
        return 2 * x

    @tool("triple_it")
    def triple(x: int) -> int:
        return 3 * x

    @tool(name="quad", effect_tags={"read"}, parallel_safe=False, timeout=2, run_inline=True)
    def quadruple(x: int) -> int:
        return 4 * x

    assert isinstance(double, Tool) and double.name == "double" and double.description == "Double it."
    assert triple.name == "triple_it"
    assert (quadruple.name, quadruple.effect_tags, quadruple.parallel_safe) == (
        "quad",
        frozenset({"read"}),
        False,
    )
    assert (quadruple.timeout, quadruple.run_inline) == (2.0, True)
    assert double(4) == 8 and triple(x=1) == 3


def test_a_single_effect_tag_string_is_one_tag() -> None:
    @tool(effect_tags="network")
    def fetch() -> None:
        return None

    assert fetch.effect_tags == frozenset({"network"})
    assert Tool(name="x", fn=fetch, effect_tags="write").effect_tags == frozenset({"write"})


def test_schema_shape_and_cache() -> None:
    @tool(description="Say hi.")
    def hello(name: str) -> str:
        return name

    schema = hello.schema()
    assert schema == {
        "type": "function",
        "function": {"name": "hello", "description": "Say hi.", "parameters": hello.parameters},
    }
    assert hello.schema() is schema


def test_direct_construction_and_structural_checks() -> None:
    def lookup(**kwargs: Any) -> str:
        return str(sorted(kwargs))

    t = Tool(
        name="lookup",
        description="Look up.",
        parameters={"properties": {"key": {"type": "string"}}, "required": ["key"]},
        fn=lookup,
    )
    assert t.parameters["type"] == "object"
    with pytest.raises(ToolArgumentsError, match="key: must be of type string"):
        t.validate_arguments({"key": 3})
    with pytest.raises(ToolArgumentsError, match="key: required argument is missing"):
        t.validate_arguments({})
    t.validate_arguments({"key": "k", "extra": 1})  # the function takes **kwargs


def test_direct_construction_rejects_keys_the_function_cannot_take() -> None:
    t = Tool(name="f", parameters={"type": "object", "properties": {"a": {}}}, fn=lambda a=None: a)
    with pytest.raises(ToolArgumentsError, match=r"b: unknown argument \(expected one of: a\)"):
        t.validate_arguments({"b": 1})


def test_a_hand_written_schema_is_validated_fully() -> None:
    """Draft 2020-12 through `json_schema` (the hand-written subset checked top-level types only:
    bounds, enums and items were left to the tool)."""
    t = Tool(
        name="tag",
        parameters={
            "type": "object",
            "properties": {
                "n": {"type": "integer", "maximum": 10},
                "mode": {"enum": ["fast", "slow"]},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["n"],
            "additionalProperties": False,
        },
        fn=lambda **kwargs: kwargs,
    )
    t.validate_arguments({"n": 3, "mode": "fast", "tags": ["a"]})
    with pytest.raises(ToolArgumentsError) as info:
        t.validate_arguments({"n": 11, "mode": "quick", "tags": ["a", 2], "tgas": []})
    assert info.value.problems == [
        "n: must be <= 10",
        'mode: must be one of "fast", "slow"',
        "tags[1]: must be of type string",
        "tgas: unknown argument (did you mean 'tags'?)",
    ]
    with pytest.raises(ToolArgumentsError, match="n: must be of type integer"):
        t.validate_arguments({"n": True})  # a boolean is not a number


def test_an_invalid_parameters_schema_is_a_tool_error_naming_it() -> None:
    t = Tool(name="f", parameters={"type": "object", "properties": {"a": {"type": "strin"}}}, fn=lambda a: a)
    with pytest.raises(ToolError, match=r"tool 'f' has an invalid parameters schema: .*properties\.a\.type"):
        t.validate_arguments({"a": "x"})


def test_parameters_must_be_an_object_schema() -> None:
    with pytest.raises(ValueError, match="type 'object'"):
        Tool(name="f", parameters={"type": "array"}, fn=lambda: None)


def test_model_copy_revalidates_and_keeps_validation() -> None:
    @tool
    def add(a: int, b: int) -> int:
        return a + b

    renamed = add.model_copy(update={"name": "plus", "timeout": 1.0})
    assert renamed.name == "plus" and renamed.schema()["function"]["name"] == "plus"
    assert add.schema()["function"]["name"] == "add"
    with pytest.raises(ToolArgumentsError, match="b: required argument is missing"):
        renamed.validate_arguments({"a": 1})
    with pytest.raises(ValueError, match="invalid tool name"):
        add.model_copy(update={"name": "bad name"})


def test_tools_are_immutable_and_hashable() -> None:
    @tool
    def f() -> None:
        return None

    with pytest.raises(ValueError):
        f.name = "g"  # type: ignore[misc]
    assert {f: 1}[f] == 1


def test_wrapping_a_tool_again_is_an_error() -> None:
    @tool
    def f() -> None:
        return None

    with pytest.raises(TypeError, match="already a Tool"):
        Tool.from_function(f)
