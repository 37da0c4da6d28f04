"""Built-in tools: a safe calculator and a `think` scratchpad.

Models are unreliable at arithmetic, so a calculator is the most useful default tool, but it
must never become an `eval` of model-written code. The evaluator walks the parsed AST with an
allow-list and bounds the work (expression length, nesting, exponent, integer size), so a
hostile or confused expression costs microseconds and yields a message the model can act on.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable

from ..errors import JianmuError
from ._base import Tool, tool

MAX_EXPRESSION_LENGTH = 1000
MAX_EXPONENT = 10_000
MAX_INT_BITS = 4096
"""Integer results beyond ~1230 decimal digits are refused (and never computed)."""
MAX_DEPTH = 500
"""Operator/call nesting; a 1000-character sum is ~500 deep, still well under the stack limit."""

Number = int | float


class CalculatorError(ValueError, JianmuError):
    """The expression is invalid or unsafe; the message says what to change."""


_CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}


def _round(x: Number, ndigits: Number | None = None) -> Number:
    if ndigits is None:
        return round(x)
    if not isinstance(ndigits, int):
        raise CalculatorError("round: the number of digits must be an integer")
    return round(x, ndigits)


def _log(x: Number, base: Number | None = None) -> float:
    return math.log(x) if base is None else math.log(x, base)


def _extreme(pick: Callable[..., Number], name: str) -> Callable[..., Number]:
    def apply(*values: Number) -> Number:
        return pick(values)

    apply.__name__ = name
    return apply


# name -> (function, min args, max args or None for any)
_FUNCTIONS: dict[str, tuple[Callable[..., Number], int, int | None]] = {
    "sqrt": (math.sqrt, 1, 1),
    "abs": (abs, 1, 1),
    "round": (_round, 1, 2),
    "min": (_extreme(min, "min"), 1, None),
    "max": (_extreme(max, "max"), 1, None),
    "floor": (math.floor, 1, 1),
    "ceil": (math.ceil, 1, 1),
    "log": (_log, 1, 2),
    "log10": (math.log10, 1, 1),
    "exp": (math.exp, 1, 1),
    "sin": (math.sin, 1, 1),
    "cos": (math.cos, 1, 1),
    "tan": (math.tan, 1, 1),
}

_BINARY: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
}

_SYNTAX_NAMES: dict[type[ast.AST], str] = {
    ast.Attribute: "attribute access",
    ast.Subscript: "indexing",
    ast.Compare: "comparison",
    ast.BoolOp: "boolean operator",
    ast.Lambda: "lambda",
    ast.IfExp: "conditional expression",
    ast.NamedExpr: "assignment",
    ast.JoinedStr: "f-string",
    ast.List: "list",
    ast.Tuple: "tuple",
    ast.Dict: "dict",
    ast.Set: "set",
    ast.ListComp: "comprehension",
    ast.GeneratorExp: "comprehension",
    ast.Starred: "unpacking",
}


def _refuse_bits(bits: int) -> None:
    if bits > MAX_INT_BITS:
        raise CalculatorError(f"result too large (more than {MAX_INT_BITS} bits)")


def _check_int(value: Number) -> Number:
    if isinstance(value, int):
        _refuse_bits(value.bit_length())
    return value


def _power(base: Number, exponent: Number) -> Number:
    if abs(exponent) > MAX_EXPONENT:
        raise CalculatorError(f"exponent {exponent} is too large (limit {MAX_EXPONENT})")
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0:
        _refuse_bits((abs(base).bit_length() - 1) * exponent)  # a lower bound, checked before computing
    result = base**exponent
    if isinstance(result, complex):
        raise CalculatorError("a negative number to a fractional power has no real result")
    return result


def _binary(op: ast.operator, left: Number, right: Number) -> Number:
    if isinstance(op, ast.Pow):
        return _power(left, right)
    if isinstance(op, ast.Mult) and isinstance(left, int) and isinstance(right, int):
        _refuse_bits(left.bit_length() + right.bit_length() - 1)
    if isinstance(op, ast.Add):
        return left + right
    if isinstance(op, ast.Sub):
        return left - right
    if isinstance(op, ast.Mult):
        return left * right
    if isinstance(op, ast.Div):
        return left / right
    if isinstance(op, ast.FloorDiv):
        return left // right
    return left % right


def _eval(node: ast.AST, depth: int) -> Number:
    if depth > MAX_DEPTH:
        raise CalculatorError("expression is too deeply nested")
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise CalculatorError(f"unsupported literal {node.value!r}: only numbers are allowed")
        return _check_int(node.value)
    if isinstance(node, ast.Name):
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        raise CalculatorError(f"unknown name '{node.id}' (known constants: {', '.join(_CONSTANTS)})")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd | ast.USub):
        operand = _eval(node.operand, depth + 1)
        return -operand if isinstance(node.op, ast.USub) else +operand
    if isinstance(node, ast.BinOp):
        if type(node.op) not in _BINARY:
            symbol = "^" if isinstance(node.op, ast.BitXor) else type(node.op).__name__
            hint = "; use '**' for powers" if symbol == "^" else ""
            raise CalculatorError(f"unsupported operator '{symbol}'{hint}")
        left = _eval(node.left, depth + 1)
        right = _eval(node.right, depth + 1)
        return _check_int(_binary(node.op, left, right))
    if isinstance(node, ast.Call):
        return _call(node, depth)
    if isinstance(node, ast.UnaryOp):
        raise CalculatorError(f"unsupported operator {type(node.op).__name__}")
    what = _SYNTAX_NAMES.get(type(node), type(node).__name__)
    if isinstance(node, ast.Attribute):
        what = f"{what} '.{node.attr}'"
    raise CalculatorError(f"unsupported syntax: {what}")


def _call(node: ast.Call, depth: int) -> Number:
    allowed = ", ".join(_FUNCTIONS)
    if isinstance(node.func, ast.Attribute):
        raise CalculatorError(
            f"unsupported syntax: attribute access '.{node.func.attr}' "
            "(call functions by bare name, e.g. sqrt(2))"
        )
    if not isinstance(node.func, ast.Name):
        raise CalculatorError(f"unsupported syntax: function call on an expression (allowed: {allowed})")
    name = node.func.id
    if name not in _FUNCTIONS:
        raise CalculatorError(f"unsupported syntax: function call '{name}' (allowed functions: {allowed})")
    if node.keywords:
        raise CalculatorError(f"{name}: keyword arguments are not supported")
    fn, least, most = _FUNCTIONS[name]
    count = len(node.args)
    if count < least or (most is not None and count > most):
        plural = "" if least == 1 else "s"
        if least == most:
            expected = f"{least} argument{plural}"
        elif most is None:
            expected = f"at least {least} argument{plural}"
        else:
            expected = f"{least} to {most} arguments"
        raise CalculatorError(f"{name} takes {expected}, got {count}")
    args = [_eval(arg, depth + 1) for arg in node.args]
    try:
        return _check_int(fn(*args))
    except ValueError as exc:
        if isinstance(exc, CalculatorError):
            raise
        raise CalculatorError(f"{name}: {exc} (argument out of range)") from exc


def evaluate(expression: str) -> Number:
    """Evaluate an arithmetic expression safely; raises `CalculatorError` with a clear reason."""
    text = expression.strip()
    if not text:
        raise CalculatorError("empty expression")
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise CalculatorError(f"expression too long ({len(text)} characters, limit {MAX_EXPRESSION_LENGTH})")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise CalculatorError(f"invalid expression: {exc.msg}") from exc
    except (RecursionError, MemoryError) as exc:
        raise CalculatorError("expression is too deeply nested") from exc
    try:
        result = _eval(tree.body, 0)
    except ZeroDivisionError as exc:
        raise CalculatorError("division by zero") from exc
    except OverflowError as exc:
        raise CalculatorError("result too large") from exc
    except TypeError as exc:
        raise CalculatorError(f"invalid expression: {exc}") from exc
    except RecursionError as exc:
        raise CalculatorError("expression is too deeply nested") from exc
    if isinstance(result, float) and not math.isfinite(result):
        raise CalculatorError("result is not a finite number (overflow)")
    return result


def format_number(value: Number) -> str:
    """Exact integers without `.0`; floats to 15 significant digits (hides 0.1+0.2 noise)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.15g}"
    return str(value)


@tool(run_inline=True)
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression and return the result. Supports numbers,
    + - * / // % ** (power), parentheses, the constants pi, e and tau and the functions sqrt,
    abs, round, min, max, floor, ceil, log (natural, or log(x, base)), log10, exp, sin, cos
    and tan (radians).

    Args:
        expression: The expression to evaluate, e.g. "2 * (3 + 4) ** 2" or "sqrt(2) / 3".
    """
    return format_number(evaluate(expression))


@tool(run_inline=True)
def think(thought: str) -> str:
    """Write down your reasoning before acting; it changes nothing and fetches nothing. Use
    it to plan the next steps, check a result or reconsider an approach.

    Args:
        thought: Your reasoning, in as much detail as useful.
    """
    return "Thought noted. Continue with the next step."


def builtin_tools() -> dict[str, Tool]:
    """The built-in tools by name (shared immutable instances)."""
    return {t.name: t for t in (calculator, think)}
