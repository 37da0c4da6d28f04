"""The safe calculator and the think scratchpad."""

from __future__ import annotations

import re
import threading

import pytest

from jianmu_like.tools import CalculatorError, Tool, builtin_tools, calculator, evaluate, think
from jianmu_like.tools.builtin import MAX_EXPRESSION_LENGTH


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("2 + 3", "5"),
        ("2 * (3 + 4) ** 2", "98"),
        ("10 / 4", "2.5"),
        ("10 / 2", "5"),
        ("7 // 2", "3"),
        ("-7 % 3", "2"),
        ("2 ** -1", "0.5"),
        ("-(-3) + +2", "5"),
        ("0.1 + 0.2", "0.3"),
        ("1e3", "1000"),
        ("sqrt(16)", "4"),
        ("sqrt(2)", "1.4142135623731"),
        ("abs(-2.5)", "2.5"),
        ("round(2.567, 2)", "2.57"),
        ("round(2.5)", "2"),
        ("min(3, 1, 2) + max(4, 5)", "6"),
        ("floor(2.7) + ceil(2.1)", "5"),
        ("log(e)", "1"),
        ("log(8, 2)", "3"),
        ("log10(1000)", "3"),
        ("exp(0)", "1"),
        ("sin(0) + cos(0) + tan(0)", "1"),
        ("2 * pi - tau", "0"),
        ("2 ** 100", "1267650600228229401496703205376"),
        (" 12345678901234567890 * 10 ", "123456789012345678900"),
    ],
)
def test_calculator_results(expression: str, expected: str) -> None:
    assert calculator(expression) == expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("1 / 0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("x + 1", "unknown name 'x'"),
        ("open('f')", "unsupported syntax: function call 'open'"),
        ("__import__('os')", "unsupported syntax: function call '__import__'"),
        ("__import__('os').system('ls')", "attribute access '.system'"),
        ("().__class__", "unsupported syntax: attribute access '.__class__'"),
        ("math.sqrt(2)", "attribute access '.sqrt'"),
        ("(lambda: 1)()", "function call on an expression"),
        ("lambda: 1", "unsupported syntax: lambda"),
        ("[1, 2]", "unsupported syntax: list"),
        ("(1, 2)", "unsupported syntax: tuple"),
        ("1 < 2", "unsupported syntax: comparison"),
        ("1 if 1 else 2", "unsupported syntax: conditional expression"),
        ("'a' * 3", "unsupported literal 'a'"),
        ("True + 1", "unsupported literal True"),
        ("1j", "unsupported literal 1j"),
        ("2 ^ 3", "use '**' for powers"),
        ("1 << 3", "unsupported operator 'LShift'"),
        ("~1", "unsupported operator Invert"),
        ("9 ** 99999", "exponent 99999 is too large"),
        ("2 ** 5000", "result too large"),
        ("(2 ** 4000) * (2 ** 4000)", "result too large"),
        ("10.0 ** 400", "result too large"),
        ("exp(1000)", "result too large"),
        ("1e308 * 10", "not a finite number"),
        ("(-8) ** 0.5", "fractional power"),
        ("sqrt(-1)", "sqrt: math domain error"),
        ("log(0)", "log: math domain error"),
        ("sqrt(1, 2)", "sqrt takes 1 argument, got 2"),
        ("log(1, 2, 3)", "log takes 1 to 2 arguments, got 3"),
        ("max()", "max takes at least 1 argument, got 0"),
        ("round(1.5, ndigits=1)", "keyword arguments are not supported"),
        ("round(1.5, 0.5)", "number of digits must be an integer"),
        ("2 +", "invalid expression"),
        ("", "empty expression"),
        ("1" + "+1" * (MAX_EXPRESSION_LENGTH // 2), "expression too long"),
        ("-" * 900 + "1", "too deeply nested"),
        ("x := 3", "invalid expression"),
        ("(x := 3)", "unsupported syntax: assignment"),
        ("import os", "invalid expression"),
    ],
)
def test_calculator_rejections(expression: str, message: str) -> None:
    with pytest.raises(CalculatorError, match=re.escape(message)):
        evaluate(expression)


def test_long_flat_sums_are_not_nesting() -> None:
    assert evaluate("+".join(["1"] * 450)) == 450


async def test_calculator_tool_metadata_and_invoke() -> None:
    assert isinstance(calculator, Tool)
    assert calculator.name == "calculator" and calculator.run_inline and calculator.parallel_safe
    assert calculator.parameters["required"] == ["expression"]
    assert "sqrt" in calculator.description
    assert await calculator.invoke({"expression": "6 * 7"}) == "42"
    with pytest.raises(CalculatorError, match="division by zero"):
        await calculator.invoke({"expression": "1/0"})


async def test_think_acknowledges_on_the_loop_thread() -> None:
    seen = threading.get_ident()
    assert think.run_inline
    reply = await think.invoke({"thought": "first add, then multiply"})
    assert reply and "noted" in reply.lower()
    assert threading.get_ident() == seen


def test_builtin_tools_by_name() -> None:
    tools = builtin_tools()
    assert tools == {"calculator": calculator, "think": think}
    tools.clear()
    assert builtin_tools()  # a fresh dict each time
