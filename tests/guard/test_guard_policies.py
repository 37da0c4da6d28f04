"""Guard policies: each rule's allow/deny/pending paths with the exact reasons the model reads."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pytest

from jianmu_like.guard._config import GuardConfig, policies_from_config
from jianmu_like.guard._decisions import Decision, GuardDecision
from jianmu_like.guard._enforcer import GuardContext, GuardEnforcer
from jianmu_like.guard._policies import (
    AllowList,
    ArgumentRule,
    DenyList,
    MaxToolCalls,
    RateLimit,
    RequireApproval,
    policy,
)
from jianmu_like.models._messages import ToolCall
from jianmu_like.tools._base import Tool


def ctx(*, calls_this_run: int = 0, now: float | None = None) -> GuardContext:
    """A context with the run counter and clock, whether or not they are fields yet."""
    extra: dict[str, Any] = {"calls_this_run": calls_this_run, "now": now}
    if now is None:
        del extra["now"]
    if all(key in GuardContext.model_fields for key in extra):
        return GuardContext(**extra)
    context = GuardContext()
    for key, value in extra.items():
        object.__setattr__(context, key, value)
    return context


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(id="c1", name=name, arguments=arguments)


def make_tool(name: str, *tags: str) -> Tool:
    return Tool(name=name, fn=lambda: None, effect_tags=frozenset(tags))


def deny(reason: str, policy_name: str) -> GuardDecision:
    return GuardDecision.deny(reason, policy_name)


ALLOW = GuardDecision.allow()
CTX = ctx()


# --- allow / deny lists ------------------------------------------------------------------------


def test_allow_list_globs() -> None:
    allow = AllowList(["calc*", "search"])
    assert allow(call("calculator"), None, CTX) == ALLOW
    assert allow(call("search"), None, CTX) == ALLOW
    assert allow(call("search_web"), None, CTX) == deny(
        "tool 'search_web' is not in the allow-list", "allow_list"
    )
    assert allow(call("Calculator"), None, CTX).decision is Decision.DENY  # case-sensitive


def test_allow_list_single_string_is_one_pattern() -> None:
    allow = AllowList("fs_?")
    assert allow(call("fs_a"), None, CTX) == ALLOW
    assert allow(call("fs_ab"), None, CTX).decision is Decision.DENY


def test_deny_list() -> None:
    deny_list = DenyList(["rm*", "[ab]_tool"])
    assert deny_list(call("rm_rf"), None, CTX) == deny("tool 'rm_rf' is in the deny-list", "deny_list")
    assert deny_list(call("b_tool"), None, CTX).decision is Decision.DENY
    assert deny_list(call("c_tool"), None, CTX) == ALLOW
    assert deny_list(call("farm"), None, CTX) == ALLOW  # globs match the whole name


def test_bad_patterns_fail_at_construction() -> None:
    with pytest.raises(ValueError, match="non-empty string"):
        AllowList([""])
    with pytest.raises(ValueError, match="non-empty string"):
        DenyList([3])  # type: ignore[list-item]


# --- argument rules ----------------------------------------------------------------------------


def test_argument_rule_only_applies_to_matching_tools() -> None:
    rule = ArgumentRule("fetch*", "url", pattern="https://.*")
    assert rule(call("search", url="ftp://x"), None, CTX) == ALLOW
    assert rule(call("fetch_page", url="https://example.com"), None, CTX) == ALLOW


def test_pattern_must_match_fully() -> None:
    rule = ArgumentRule("fetch", "url", pattern=r"https://[a-z.]+")
    assert rule(call("fetch", url="https://example.com"), None, CTX) == ALLOW
    assert rule(call("fetch", url="https://example.com/../x"), None, CTX) == deny(
        "argument 'url' of tool 'fetch' must match the pattern 'https://[a-z.]+' "
        "(got 'https://example.com/../x')",
        "argument_rule(fetch.url)",
    )
    assert rule(call("fetch", url="see https://a.b"), None, CTX).decision is Decision.DENY  # not search
    assert rule(call("fetch", url=3), None, CTX).reason == (
        "argument 'url' of tool 'fetch' must be a string matching 'https://[a-z.]+' (got int)"
    )


def test_missing_argument_is_ignored_unless_required() -> None:
    optional = ArgumentRule("fetch", "url", pattern="https://.*")
    assert optional(call("fetch"), None, CTX) == ALLOW
    assert optional(call("fetch", url=None), None, CTX) == ALLOW  # null means "not given"
    required = ArgumentRule("fetch", "url", required=True)
    assert required(call("fetch"), None, CTX) == deny(
        "argument 'url' of tool 'fetch' is required", "argument_rule(fetch.url)"
    )
    assert required(call("fetch", url="x"), None, CTX) == ALLOW


def test_rule_without_constraint_is_refused() -> None:
    with pytest.raises(ValueError, match="needs at least one of"):
        ArgumentRule("fetch", "url")


def test_predicate_reasons() -> None:
    def is_small(value: Any) -> bool:
        return isinstance(value, int) and value < 10

    named = ArgumentRule("calc", "n", predicate=is_small)
    assert named(call("calc", n=3), None, CTX) == ALLOW
    assert named(call("calc", n=30), None, CTX).reason == (
        "argument 'n' of tool 'calc' was rejected by the check 'is_small'"
    )
    anonymous = ArgumentRule("calc", "n", predicate=lambda v: v < 10)
    assert anonymous(call("calc", n=30), None, CTX).reason == "argument 'n' of tool 'calc' was rejected"
    broken = ArgumentRule("calc", "n", predicate=lambda v: v < 10)
    assert broken(call("calc", n="x"), None, CTX).reason == (
        "argument 'n' of tool 'calc' could not be checked "
        "(TypeError: '<' not supported between instances of 'str' and 'int')"
    )


def test_custom_message_replaces_the_reason() -> None:
    rule = ArgumentRule("calc", "n", predicate=lambda v: v < 10, message="keep n below 10")
    assert rule(call("calc", n=30), None, CTX) == deny("keep n below 10", "argument_rule(calc.n)")


def test_every_violation_is_reported() -> None:
    rule = ArgumentRule("fetch", "url", pattern="https://.*", schema={"type": "string", "maxLength": 5})
    assert rule(call("fetch", url="http://long"), None, CTX).reason == (
        "argument 'url' of tool 'fetch' must match the pattern 'https://.*' (got 'http://long'); "
        "argument 'url' of tool 'fetch' must be at most 5 character(s) long"
    )


def test_schema_scalars() -> None:
    rule = ArgumentRule("calc", "n", schema={"type": "integer", "minimum": 1, "maximum": 10})
    assert rule(call("calc", n=5), None, CTX) == ALLOW
    assert rule(call("calc", n=5.0), None, CTX) == ALLOW  # JSON has one number type
    assert rule(call("calc", n=11), None, CTX).reason == "argument 'n' of tool 'calc' must be <= 10"
    assert (
        rule(call("calc", n=True), None, CTX).reason == "argument 'n' of tool 'calc' must be of type integer"
    )
    mode = ArgumentRule("sort", "order", schema={"enum": ["asc", "desc"]})
    assert mode(call("sort", order="up"), None, CTX).reason == (
        "argument 'order' of tool 'sort' must be one of \"asc\", \"desc\""
    )
    flag = ArgumentRule("x", "f", schema={"const": 1})
    assert flag(call("x", f=True), None, CTX).reason == "argument 'f' of tool 'x' must be 1"  # true is not 1
    name = ArgumentRule("x", "s", schema={"minLength": 2, "pattern": "^[a-z]"})
    assert name(call("x", s="A"), None, CTX).reason == (
        "argument 's' of tool 'x' must be at least 2 character(s) long; "
        "argument 's' of tool 'x' must match the pattern '^[a-z]'"
    )
    assert name(call("x", s="ab1"), None, CTX) == ALLOW  # schema patterns are searches


def test_schema_nested_shapes() -> None:
    rule = ArgumentRule(
        "query",
        "opts",
        schema={
            "type": "object",
            "properties": {
                "depth": {"type": "integer", "maximum": 3},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
                "key": {"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]},
            },
            "required": ["depth"],
            "additionalProperties": False,
        },
    )
    assert rule(call("query", opts={"depth": 2, "tags": ["a"], "key": 0}), None, CTX) == ALLOW
    verdict = rule(call("query", opts={"tags": ["a", 1, "c"], "key": -1, "extra": 1}), None, CTX)
    assert verdict.reason.split("; ") == [
        "argument 'opts' of tool 'query' at 'opts.depth' is required",
        "argument 'opts' of tool 'query' at 'opts.tags' must have at most 2 item(s)",
        "argument 'opts' of tool 'query' at 'opts.tags[1]' must be of type string",
        "argument 'opts' of tool 'query' at 'opts.key' must satisfy one of: "
        "(must be of type string) or (must be >= 0)",
        "argument 'opts' of tool 'query' at 'opts.extra' is not allowed",
    ]


def test_schema_not_and_all_of() -> None:
    rule = ArgumentRule("x", "v", schema={"allOf": [{"type": "number"}, {"not": {"const": 0}}]})
    assert rule(call("x", v=2), None, CTX) == ALLOW
    assert rule(call("x", v=0), None, CTX).reason == "argument 'v' of tool 'x' must not match {\"const\": 0}"


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"maximun": 100}, "unknown JSON-schema keyword 'maximun' in schema "),
        (
            {"properties": {"a": {"minimun": 1}}},
            "unknown JSON-schema keyword 'minimun' in schema.properties.a",
        ),
        ({"$ref": "#/defs/x"}, "schema: \\$ref '#/defs/x' does not resolve inside the document"),
        ({"$ref": "https://example.com/s.json"}, "is outside the document: only local refs like"),
        ({"type": "text"}, "at schema.type: 'text' is not one of \\['array'"),
        ({"pattern": "("}, "at schema.pattern: '\\(' is not a valid regular expression"),
        ({"maximum": "3"}, "at schema.maximum: '3' is not of type 'number'"),
        ({"properties": {"a": {"minLength": -1}}}, "at schema.properties.a.minLength: -1 is less than"),
        ({"items": [{"type": "string"}]}, "at schema.items: .* is not of type 'object', 'boolean'"),
        ({"oneOf": []}, "at schema.oneOf: \\[\\] should be non-empty"),
    ],
)
def test_schemas_that_would_not_check_as_written_are_refused(schema: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ArgumentRule("x", "v", schema=schema)


def test_bounds_do_not_coerce_and_imply_their_type() -> None:
    limit = ArgumentRule("calc", "n", schema={"maximum": 100})
    assert limit(call("calc", n=50), None, CTX) == ALLOW
    assert limit(call("calc", n="1000"), None, CTX).reason == "argument 'n' of tool 'calc' must be a number"
    assert limit(call("calc", n="50"), None, CTX).reason == "argument 'n' of tool 'calc' must be a number"
    typed = ArgumentRule("calc", "n", schema={"type": "integer", "maximum": 100})
    assert (
        typed(call("calc", n="1000"), None, CTX).reason
        == "argument 'n' of tool 'calc' must be of type integer"
    )
    short = ArgumentRule("x", "s", schema={"maxLength": 3})
    assert short(call("x", s=12345), None, CTX).reason == "argument 's' of tool 'x' must be a string"
    either = ArgumentRule("x", "v", schema={"type": ["number", "string"], "maximum": 5})
    assert either(call("x", v="1000"), None, CTX) == ALLOW  # an explicit type says strings are fine


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_are_not_numbers(value: float) -> None:
    rule = ArgumentRule("calc", "n", schema={"type": "number", "minimum": 0, "maximum": 100})
    assert (
        rule(call("calc", n=value), None, CTX).reason == "argument 'n' of tool 'calc' must be of type number"
    )
    untyped = ArgumentRule("calc", "n", schema={"minimum": 0, "maximum": 100})
    assert untyped(call("calc", n=value), None, CTX).reason == "argument 'n' of tool 'calc' must be a number"
    integer = ArgumentRule("calc", "n", schema={"type": "integer"})
    assert (
        integer(call("calc", n=value), None, CTX).reason
        == "argument 'n' of tool 'calc' must be of type integer"
    )


def test_full_json_schema_one_of_refs_and_formats() -> None:
    rule = ArgumentRule(
        "x",
        "v",
        schema={
            "$defs": {"port": {"type": "integer", "minimum": 1, "maximum": 65535}},
            "oneOf": [{"$ref": "#/$defs/port"}, {"type": "string", "format": "ipv4"}],
        },
    )
    assert rule(call("x", v=8080), None, CTX) == ALLOW
    assert rule(call("x", v="10.0.0.1"), None, CTX) == ALLOW
    assert rule(call("x", v="not an address"), None, CTX).reason == (
        "argument 'v' of tool 'x' must satisfy exactly one of: "
        "(must be of type integer) or (must be a valid ipv4)"
    )
    day = ArgumentRule("x", "d", schema={"type": "string", "format": "date", "description": "a day"})
    assert day(call("x", d="2024-02-30"), None, CTX).reason == "argument 'd' of tool 'x' must be a valid date"
    assert day(call("x", d="2024-02-28"), None, CTX) == ALLOW


# --- paths -------------------------------------------------------------------------------------


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("s")
    return root


def test_path_under_allows_paths_inside(workspace: Path) -> None:
    rule = ArgumentRule("write_file", "path", path_under=workspace)
    for inside in (workspace, workspace / "a.txt", workspace / "sub" / ".." / "new.txt", workspace / "x/y/z"):
        assert rule(call("write_file", path=str(inside)), None, CTX) == ALLOW, inside


def test_path_traversal_is_denied(workspace: Path) -> None:
    rule = ArgumentRule("write_file", "path", path_under=str(workspace))
    escape = f"{workspace}/../secret.txt"
    assert rule(call("write_file", path=escape), None, CTX) == deny(
        f"argument 'path' of tool 'write_file' must be a path under '{workspace}'; "
        f"{escape!r} resolves outside it",
        "argument_rule(write_file.path)",
    )
    sibling = f"{workspace}-evil/x"  # a shared string prefix is not containment
    assert rule(call("write_file", path=sibling), None, CTX).decision is Decision.DENY


def test_literal_traversal_example() -> None:
    rule = ArgumentRule("write_file", "path", path_under="/tmp/work")
    verdict = rule(call("write_file", path="/tmp/work/../etc/passwd"), None, CTX)
    assert verdict.reason == (
        "argument 'path' of tool 'write_file' must be a path under '/tmp/work'; "
        "'/tmp/work/../etc/passwd' resolves outside it"
    )


def test_symlink_out_of_the_workspace_is_denied(workspace: Path) -> None:
    (workspace / "link").symlink_to(workspace.parent)
    (workspace / "inner").symlink_to(workspace / "sub")
    rule = ArgumentRule("read_file", "path", path_under=workspace)
    assert rule(call("read_file", path=str(workspace / "link" / "secret.txt")), None, CTX).reason == (
        f"argument 'path' of tool 'read_file' must be a path under '{workspace}'; "
        f"{str(workspace / 'link' / 'secret.txt')!r} resolves outside it"
    )
    assert rule(call("read_file", path=str(workspace / "inner" / "f")), None, CTX) == ALLOW


def test_relative_paths_resolve_against_the_working_directory(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rule = ArgumentRule("read_file", "path", path_under=workspace)
    monkeypatch.chdir(workspace / "sub")
    assert rule(call("read_file", path="notes.txt"), None, CTX) == ALLOW
    assert rule(call("read_file", path="../../secret.txt"), None, CTX).decision is Decision.DENY


def test_odd_path_values_are_denied(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rule = ArgumentRule("read_file", "path", path_under=workspace)
    assert rule(call("read_file", path=["a"]), None, CTX).reason == (
        f"argument 'path' of tool 'read_file' must be a path string under '{workspace}' (got list)"
    )
    assert rule(call("read_file", path=f"{workspace}/a\x00b"), None, CTX).decision is Decision.DENY
    monkeypatch.setenv("HOME", str(workspace.parent))
    monkeypatch.chdir(workspace)
    # Inside when taken literally (./~/secret.txt), outside if the tool expands `~`.
    assert rule(call("read_file", path="~/secret.txt"), None, CTX).decision is Decision.DENY


# --- rate limit --------------------------------------------------------------------------------


def use(limit: RateLimit, c: ToolCall, context: GuardContext) -> GuardDecision:
    """Check a call, and record it when allowed, as the enforcer and executor do."""
    verdict = limit(c, None, context)
    if verdict.decision is Decision.ALLOW:
        limit.on_allowed(c, context)
    return verdict


def test_rate_limit_check_alone_records_nothing() -> None:
    limit = RateLimit("search", calls=1, per_seconds=60)
    for _ in range(3):
        assert limit(call("search"), None, ctx(now=1000.0)) == ALLOW  # checked, never run
    assert use(limit, call("search"), ctx(now=1000.0)) == ALLOW
    assert use(limit, call("search"), ctx(now=1001.0)).decision is Decision.DENY


def test_rate_limit_sliding_window() -> None:
    limit = RateLimit("search*", calls=2, per_seconds=60)

    def at(t: float) -> GuardContext:
        return ctx(now=1000.0 + t)

    assert use(limit, call("search"), at(0)) == ALLOW
    assert use(limit, call("search_web"), at(10)) == ALLOW  # shared by every matching tool
    assert use(limit, call("calculator"), at(11)) == ALLOW  # not counted
    assert use(limit, call("search"), at(30)) == deny(
        "rate limit: at most 2 call(s) of 'search*' per 60 s; retry in 30 s", "rate_limit(search*: 2/60s)"
    )
    assert use(limit, call("search"), at(59.95)).reason.endswith("retry in 0.1 s")
    assert use(limit, call("search"), at(60)) == ALLOW  # the call at 0 left the window
    assert use(limit, call("search"), at(65)).reason.endswith("retry in 5 s")
    assert use(limit, call("search"), at(70)) == ALLOW


def test_rate_limit_counts_only_allowed_calls() -> None:
    limit = RateLimit("search", calls=1, per_seconds=10)
    assert use(limit, call("search"), ctx(now=100.0)) == ALLOW
    for t in (101.0, 102.0, 105.0):
        assert use(limit, call("search"), ctx(now=t)).decision is Decision.DENY
    assert use(limit, call("search"), ctx(now=110.0)) == ALLOW  # the denials did not extend it


def test_rate_limit_uses_the_wall_clock_without_context_now() -> None:
    limit = RateLimit("search", calls=1, per_seconds=3600)
    assert use(limit, call("search"), GuardContext()) == ALLOW
    assert use(limit, call("search"), GuardContext()).decision is Decision.DENY
    limit.reset()
    assert use(limit, call("search"), GuardContext()) == ALLOW


@pytest.mark.parametrize(("calls", "per"), [(0, 1), (True, 1), (1, 0), (1, float("inf"))])
def test_rate_limit_rejects_bad_limits(calls: int, per: float) -> None:
    with pytest.raises(ValueError, match="RateLimit"):
        RateLimit("search", calls, per)


# --- per-run cap -------------------------------------------------------------------------------


def test_max_tool_calls() -> None:
    cap = MaxToolCalls(3)
    assert cap(call("x"), None, ctx(calls_this_run=0)) == ALLOW
    assert cap(call("x"), None, ctx(calls_this_run=2)) == ALLOW
    assert cap(call("x"), None, ctx(calls_this_run=3)) == deny(
        "tool call budget of 3 per run exhausted", "max_tool_calls(3)"
    )
    assert MaxToolCalls(0)(call("x"), None, CTX).decision is Decision.DENY
    with pytest.raises(ValueError, match="non-negative"):
        MaxToolCalls(-1)


# --- approval ----------------------------------------------------------------------------------


def test_approval_by_tool_glob() -> None:
    approval = RequireApproval(tools=["delete_*"])
    assert approval(call("delete_file"), None, CTX) == GuardDecision.pending(
        "tool 'delete_file' requires approval", "require_approval"
    )
    assert approval(call("read_file"), None, CTX) == ALLOW


def test_approval_by_effect_tag() -> None:
    approval = RequireApproval(effect_tags={"write", "network", "destructive"})
    tool = make_tool("delete_file", "destructive", "write", "local")
    assert (
        approval(call("delete_file"), tool, CTX).reason
        == "tool 'delete_file' has effects 'destructive', 'write'"
    )
    assert approval(call("fetch"), make_tool("fetch", "network"), CTX) == GuardDecision.pending(
        "tool 'fetch' has effect 'network'", "require_approval"
    )
    assert approval(call("read"), make_tool("read", "read"), CTX) == ALLOW
    assert approval(call("unknown"), None, CTX) == ALLOW
    assert (
        RequireApproval(effect_tags="write")(call("w"), make_tool("w", "write"), CTX).decision
        is Decision.PENDING
    )


def test_approval_by_predicate() -> None:
    def big_transfer(c: ToolCall) -> bool:
        return float(c.arguments.get("amount", 0)) > 1000

    approval = RequireApproval(when=big_transfer)
    assert approval(call("pay", amount=10), None, CTX) == ALLOW
    assert approval(call("pay", amount=5000), None, CTX).reason == (
        "call of tool 'pay' meets the approval condition 'big_transfer'"
    )
    assert approval(call("pay", amount="lots"), None, CTX).reason == (
        "the approval condition for tool 'pay' failed (ValueError: could not convert string to float: 'lots')"
    )
    anonymous = RequireApproval(when=lambda c: True, reason="every call is reviewed")
    assert anonymous(call("x"), None, CTX) == GuardDecision.pending(
        "every call is reviewed", "require_approval"
    )


def test_approval_needs_a_criterion() -> None:
    with pytest.raises(ValueError, match="at least one of tools, effect_tags or when"):
        RequireApproval()


# --- combination -------------------------------------------------------------------------------


def test_enforcer_first_deny_wins_over_pending() -> None:
    enforcer = GuardEnforcer(
        [
            RequireApproval(tools=["*"]),
            ArgumentRule("write_file", "path", path_under="/tmp/work"),
            DenyList(["write_*"]),
        ]
    )
    assert enforcer.check(call("write_file", path="/etc/passwd"), None, CTX) == deny(
        "argument 'path' of tool 'write_file' must be a path under '/tmp/work'; "
        "'/etc/passwd' resolves outside it",
        "argument_rule(write_file.path)",
    )
    assert enforcer.check(call("read_file"), None, CTX) == GuardDecision.pending(
        "tool 'read_file' requires approval", "require_approval"
    )
    assert GuardEnforcer([AllowList("*"), MaxToolCalls(5)]).check(call("x"), None, CTX) == ALLOW


def test_rate_limit_after_a_denying_policy_keeps_its_quota() -> None:
    limit = RateLimit("search", calls=1, per_seconds=60)
    enforcer = GuardEnforcer([ArgumentRule("search", "q", required=True), limit])
    assert enforcer.check(call("search"), None, ctx(now=1000.0)).policy == "argument_rule(search.q)"
    assert enforcer.check(call("search", q="x"), None, ctx(now=1001.0)) == ALLOW
    enforcer.allowed(call("search", q="x"), ctx(now=1001.0))  # it ran
    assert enforcer.check(call("search", q="y"), None, ctx(now=1002.0)).decision is Decision.DENY


# --- the decorator -----------------------------------------------------------------------------


def test_policy_decorator_bare_and_named() -> None:
    @policy
    def no_shell(c: ToolCall, tool: Tool | None, context: GuardContext) -> bool:
        """Shells are off-limits."""
        return c.name != "shell"

    assert no_shell.name == "no_shell" and no_shell.__doc__ == "Shells are off-limits."
    assert no_shell(call("calc"), None, CTX) == ALLOW
    assert no_shell(call("shell"), None, CTX) == deny("refused by policy no_shell", "no_shell")

    @policy(name="ops_only")
    def ops(c: ToolCall, tool: Tool | None, context: GuardContext) -> GuardDecision | Decision | None:
        if context.namespace == "ops":
            return None
        return Decision.PENDING if c.name == "deploy" else GuardDecision.deny("ops namespace only")

    assert ops(call("deploy"), None, CTX) == GuardDecision.pending(
        "held for approval by policy ops_only", "ops_only"
    )
    assert ops(call("x"), None, CTX) == deny("ops namespace only", "ops_only")
    assert ops(call("x"), None, GuardContext(namespace="ops")) == ALLOW
    assert GuardEnforcer([ops]).check(call("x"), None, CTX).policy == "ops_only"


def test_policy_decorator_keeps_a_policys_own_attribution() -> None:
    keep = policy(lambda c, t, x: GuardDecision.deny("no", "inner"), name="outer")
    assert keep(call("x"), None, CTX) == deny("no", "inner")
    assert policy(lambda c, t, x: Decision.ALLOW)(call("x"), None, CTX) == ALLOW


# --- configuration -----------------------------------------------------------------------------

FULL_CONFIG: dict[str, Any] = {
    "allow": ["calc*", "search", "write_file", "fetch", "delete_*"],
    "deny": ["rm*"],
    "require_approval": {"tools": ["delete_*"], "effect_tags": ["destructive"]},
    "rate_limits": [{"tool": "search", "calls": 2, "per_seconds": 60}],
    "max_tool_calls": 20,
    "arguments": [
        {"tool": "write_file", "argument": "path", "path_under": "/tmp/work"},
        {"tool": "fetch", "argument": "url", "pattern": "https://.*"},
        {"tool": "calc", "argument": "n", "schema": {"type": "integer", "maximum": 9}, "message": "n < 10"},
    ],
}


def test_policies_from_config_happy_path() -> None:
    policies = policies_from_config(FULL_CONFIG)
    assert [type(p).__name__ for p in policies] == [
        "DenyList",
        "AllowList",
        "MaxToolCalls",
        "ArgumentRule",
        "ArgumentRule",
        "ArgumentRule",
        "RateLimit",
        "RequireApproval",
    ]
    enforcer = GuardEnforcer(policies)

    def check(c: ToolCall, tool: Tool | None = None, **context: Any) -> GuardDecision:
        """Check, and record the call as run when allowed (what the executor does)."""
        guard_context = ctx(**{"now": 1000.0, **context})
        verdict = enforcer.check(c, tool, guard_context)
        if verdict.decision is Decision.ALLOW:
            enforcer.allowed(c, guard_context)
        return verdict

    assert check(call("calculator")) == ALLOW
    assert check(call("rm_rf")).reason == "tool 'rm_rf' is in the deny-list"
    assert check(call("shell")).reason == "tool 'shell' is not in the allow-list"
    assert check(call("calculator"), calls_this_run=20).reason == "tool call budget of 20 per run exhausted"
    assert check(call("write_file", path="/tmp/work/../etc/passwd")).decision is Decision.DENY
    assert check(call("fetch", url="http://x")).decision is Decision.DENY
    assert check(call("calc", n=12)) == deny("n < 10", "argument_rule(calc.n)")
    assert check(call("delete_file")).decision is Decision.PENDING
    assert check(call("calculator"), make_tool("calculator", "destructive")).reason == (
        "tool 'calculator' has effect 'destructive'"
    )
    assert check(call("search")) == ALLOW
    assert check(call("search")) == ALLOW
    assert check(call("search")).reason == "rate limit: at most 2 call(s) of 'search' per 60 s; retry in 60 s"


def test_config_shorthands_and_empty_sections() -> None:
    assert policies_from_config(None) == []
    assert policies_from_config({}) == []
    (allow,) = policies_from_config({"allow": "calc*"})
    assert isinstance(allow, AllowList) and allow.globs.patterns == ("calc*",)
    (approval,) = policies_from_config({"require_approval": {"effect_tags": "write"}})
    assert isinstance(approval, RequireApproval) and approval.effect_tags == {"write"}
    config = GuardConfig(max_tool_calls=1)
    assert [type(p) for p in policies_from_config(config)] == [MaxToolCalls]
    assert len(policies_from_config({"allow": []})) == 1  # an empty allow-list allows nothing


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"allw": ["x"]},
            "allw: unknown key (did you mean 'allow'?)",
        ),
        ({"deny": [1]}, "deny[0]: Input should be a valid string (got 1)"),
        ({"allow": {"a": 1}}, "allow: Input should be a valid list"),
        ({"max_tool_calls": -1}, "max_tool_calls: Input should be greater than or equal to 0"),
        ({"max_tool_calls": "5"}, "max_tool_calls: Input should be a valid integer"),
        ({"require_approval": {}}, "require_approval: needs 'tools' or 'effect_tags'"),
        ({"require_approval": {"when": "x"}}, "require_approval.when: unknown key"),
        ({"rate_limits": [{"tool": "s", "calls": 0, "per_seconds": 1}]}, "rate_limits[0].calls"),
        ({"rate_limits": [{"tool": "s", "calls": 1}]}, "rate_limits[0].per_seconds: required key is missing"),
        ({"rate_limits": [{"tool": "s", "calls": 1, "per_seconds": -2}]}, "rate_limits[0].per_seconds"),
        (
            {"rate_limits": [{"tool": "s", "calls": 1, "per_seconds": 1, "burst": 2}]},
            "rate_limits[0].burst: unknown key (expected one of: calls, per_seconds, tool)",
        ),
        ({"arguments": [{"tool": "f", "argument": "u"}]}, "arguments[0]: needs at least one of"),
        (
            {"arguments": [{"tool": "f", "argument": "u", "pattern": "("}]},
            "arguments[0].pattern: not a valid regular expression",
        ),
        (
            {"arguments": [{"tool": "f", "argument": "u", "schema": {"oneOf": []}}]},
            "arguments[0].schema: invalid JSON schema at schema.oneOf: [] should be non-empty",
        ),
        (
            {"arguments": [{"tool": "f", "argument": "u", "predicate": "x"}]},
            "arguments[0].predicate: unknown key",
        ),
        (
            {"arguments": [{"tool": "f", "path_under": "/w"}]},
            "arguments[0].argument: required key is missing",
        ),
    ],
)
def test_config_errors_name_the_key(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as info:
        policies_from_config(data)
    assert str(info.value).startswith("invalid guard config: ")
    assert message in str(info.value)


def test_config_must_be_a_mapping() -> None:
    with pytest.raises(ValueError, match="expected a mapping, got list"):
        policies_from_config(["allow"])  # type: ignore[arg-type]


def test_path_under_dir_is_resolved_once(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(real)
    rule = ArgumentRule("w", "path", path_under=alias)  # the workspace itself may be a link
    assert rule(call("w", path=os.path.join(real, "f")), None, CTX) == ALLOW
    assert rule(call("w", path=os.path.join(alias, "f")), None, CTX) == ALLOW
