"""The `guard:` configuration section and the policies it builds.

`policies_from_config({...})` turns the plain data of a YAML `guard:` section into policy
objects; every unknown key or bad value is a ValueError naming where it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .._base.validation import describe_validation
from ._enforcer import Policy
from ._policies import AllowList, ArgumentRule, DenyList, MaxToolCalls, RateLimit, RequireApproval
from ._value_schema import ValueSchema

# --- configuration -----------------------------------------------------------------------------


def _one_or_many(value: Any) -> Any:
    """`allow: calc*` in YAML means one pattern, not a type error."""
    return [value] if isinstance(value, str) else value


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ApprovalConfig(_Section):
    """`require_approval:` which calls wait for a human."""

    tools: list[str] | None = None
    effect_tags: list[str] | None = None
    reason: str | None = None

    @field_validator("tools", "effect_tags", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return _one_or_many(value)

    @model_validator(mode="after")
    def _has_criterion(self) -> ApprovalConfig:
        if not self.tools and not self.effect_tags:
            raise ValueError("needs 'tools' or 'effect_tags'")
        return self


class RateLimitConfig(_Section):
    """One `rate_limits:` entry."""

    tool: str = Field(min_length=1)
    calls: int = Field(strict=True, ge=1)
    per_seconds: float = Field(gt=0, allow_inf_nan=False)


class ArgumentRuleConfig(_Section):
    """One `arguments:` entry (predicates need code, so they are not configurable)."""

    tool: str = Field(min_length=1)
    argument: str = Field(min_length=1)
    pattern: str | None = None
    schema_: dict[str, Any] | bool | None = Field(default=None, alias="schema")
    path_under: str | None = Field(default=None, min_length=1)
    required: bool = False
    message: str | None = None

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from exc
        return value

    @field_validator("schema_")
    @classmethod
    def _checkable(cls, value: dict[str, Any] | bool | None) -> dict[str, Any] | bool | None:
        if value is not None:
            ValueSchema(value)
        return value

    @model_validator(mode="after")
    def _has_constraint(self) -> ArgumentRuleConfig:
        if (self.pattern, self.schema_, self.path_under) == (None, None, None) and not self.required:
            raise ValueError("needs at least one of 'pattern', 'schema', 'path_under' or 'required: true'")
        return self


class GuardConfig(_Section):
    """The `guard:` section of an agent's configuration; `build_policies()` makes the policies."""

    allow: list[str] | None = None
    deny: list[str] = []
    require_approval: ApprovalConfig | None = None
    rate_limits: list[RateLimitConfig] = []
    max_tool_calls: int | None = Field(default=None, strict=True, ge=0)
    arguments: list[ArgumentRuleConfig] = []

    @field_validator("allow", "deny", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return _one_or_many(value)

    def tool_references(self) -> list[tuple[tuple[str | int, ...], str]]:
        """Every tool pattern of the section with its key path (e.g. `require_approval.tools.0`),
        so a rule that names no tool of the agent is reported at its line."""
        out: list[tuple[tuple[str | int, ...], str]] = []
        for key in ("deny", "allow"):
            out.extend(((key, i), pattern) for i, pattern in enumerate(getattr(self, key) or ()))
        out.extend((("arguments", i, "tool"), rule.tool) for i, rule in enumerate(self.arguments))
        out.extend((("rate_limits", i, "tool"), limit.tool) for i, limit in enumerate(self.rate_limits))
        if self.require_approval is not None:
            tools = self.require_approval.tools or ()
            out.extend((("require_approval", "tools", i), pattern) for i, pattern in enumerate(tools))
        return out

    def build_policies(self) -> list[Policy]:
        """Denials that need no state first, rate limits after them (a call another policy
        denies must not use up the quota), approval last (PENDING never hides a DENY)."""
        out: list[Policy] = []
        if self.deny:
            out.append(DenyList(self.deny))
        if self.allow is not None:
            out.append(AllowList(self.allow))
        if self.max_tool_calls is not None:
            out.append(MaxToolCalls(self.max_tool_calls))
        out.extend(
            ArgumentRule(
                rule.tool,
                rule.argument,
                pattern=rule.pattern,
                schema=rule.schema_,
                path_under=rule.path_under,
                required=rule.required,
                message=rule.message,
            )
            for rule in self.arguments
        )
        out.extend(RateLimit(limit.tool, limit.calls, limit.per_seconds) for limit in self.rate_limits)
        if self.require_approval is not None:
            approval = self.require_approval
            out.append(
                RequireApproval(
                    tools=approval.tools, effect_tags=approval.effect_tags, reason=approval.reason
                )
            )
        return out


def policies_from_config(data: Mapping[str, Any] | GuardConfig | None) -> list[Policy]:
    """Policies from a plain mapping (a YAML `guard:` section); ValueError names the bad key."""
    if data is None:
        return []
    if isinstance(data, GuardConfig):
        return data.build_policies()
    if not isinstance(data, Mapping):
        raise ValueError(f"invalid guard config: expected a mapping, got {type(data).__name__}")
    try:
        config = GuardConfig.model_validate(dict(data))
    except ValidationError as exc:
        problems = describe_validation(exc, model=GuardConfig)
        raise ValueError(f"invalid guard config: {'; '.join(problems)}") from None
    return config.build_policies()
