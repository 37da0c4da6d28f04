"""Prompt wording the reference documents ask for (issue 40's smaller items): the synthesis
prompt asks for Markdown (000-41), the research prompt has a simple and a complex tool budget
(004-30), the prompted tool protocols say tool names are case-sensitive (002-07) and the text
format bounds a thought (002-40)."""

from __future__ import annotations

from jianmu_like import create_research_node, human
from jianmu_like.models._react_text import TEXT_DIALECT
from jianmu_like.models._text_protocol import render_system_prompt
from jianmu_like.nodes import AgentLLMNode
from jianmu_like.nodes._synthesis import synthesis_messages
from jianmu_like.nodes._trace import read_trace
from jianmu_like.testing import scripted_client

TOOLS = [{"type": "function", "function": {"name": "Search", "description": "Search.", "parameters": {}}}]


def test_the_synthesis_prompt_asks_for_markdown() -> None:
    prompt = synthesis_messages(read_trace([human("q")]), 100)[0].content or ""
    assert "Markdown" in prompt and "same language as the question" in prompt


def test_the_research_prompt_has_a_simple_and_a_complex_budget() -> None:
    for cap, simple in ((5, 3), (4, 2), (1, 1)):
        root = create_research_node(model_client=scripted_client([]), max_tool_calls=cap)
        llm = next(n for n in root.iterate() if isinstance(n, AgentLLMNode))
        prompt = llm.context_builder.system_message(None).content or ""
        assert f"at most {cap} tool calls" in prompt
        assert f"a simple question needs {simple} at most, use them all only for a complex one" in prompt


def test_the_prompted_protocols_say_tool_names_are_case_sensitive() -> None:
    json_prompt = render_system_prompt(None, TOOLS)
    react_prompt = render_system_prompt(None, TOOLS, dialect=TEXT_DIALECT)
    for prompt in (json_prompt, react_prompt):
        assert "Tool names are case-sensitive: write them exactly as listed." in prompt
    assert "Keep each Thought to three sentences at most, ending with the next step." in react_prompt
