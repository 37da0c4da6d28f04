"""StateManager: the one place agent state lives, read and written through reducers.

State is a pydantic model instance. Writes go through each field's reducer (`operator.add`
appends) and are *not* re-validated: validation on every write dominated the per-iteration cost
and every writer inside the framework already produces typed values. Snapshots are plain JSON
data; `restore()` validates them back into the schema, namespaced keys included.

Namespaces: `update({...}, namespace="a")` writes `a.<field>` into the model's extra storage
(the schema must allow extra keys), so several agents share one state without touching each
other's keys. A namespaced key follows the reducer, lifetime and type of the schema field of the
same name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from pydantic import BaseModel, TypeAdapter

from ..errors import JianmuError
from ._journal import ToolJournal
from ._schema import FieldSpec, SchemaSpec, Scope, schema_spec
from ._wakeup import Wakeup

_MISSING: Any = object()
_RESOLVED: dict[type[BaseModel], dict[tuple[str, str | None], tuple[str, FieldSpec | None, bool]]] = {}
_PLAIN: dict[type[BaseModel], dict[str, tuple[str, FieldSpec | None]]] = {}
"""Per schema: top-level keys (no namespace) that name a schema field -> (field, spec); the
hot path's lookups, without building a (key, namespace) tuple per access."""
_ASSIGN, _EMPTY, _FRESH = "assign", "empty", "fresh"
_RESETS: dict[tuple[type[BaseModel], tuple[Scope, ...]], list[tuple[str, str, Any]]] = {}
"""Per (schema, scopes): how each ephemeral field of those scopes is reset (see `_resets`); the
step scope is reset at every loop iteration, so the table is worth keeping."""
_SCALARS = (int, float, bool, str, bytes, type(None))


class StateError(KeyError, JianmuError):
    """A key that the schema cannot hold, or a snapshot that does not fit the schema."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "state error"


@cache
def _adapter(schema: type[BaseModel], field: str) -> TypeAdapter[Any]:
    annotation: Any = schema.model_fields[field].annotation
    return TypeAdapter(annotation)


class StateManager:
    """Holds one state model instance; every node of a tree gets it as `state_manager`."""

    def __init__(
        self,
        schema: type[BaseModel],
        initial: BaseModel | Mapping[str, Any] | None = None,
        *,
        wakeup: Wakeup | None = None,
    ) -> None:
        self.schema = schema
        self._spec = schema_spec(schema)
        if initial is None:
            self.state: BaseModel = schema()
        elif isinstance(initial, schema):
            self.state = initial
        else:
            self.state = schema.model_validate(initial)
        self.wakeup = wakeup or Wakeup()
        # Key resolution depends on the schema only: shared by every manager of the schema, so a
        # new conversation does not resolve its keys again.
        self._resolved = _RESOLVED.setdefault(schema, {})
        self._plain = _PLAIN.setdefault(schema, {})
        self.version = 0
        """Incremented by every write: tells a checkpointer whether anything changed."""
        self.journal: ToolJournal | None = None
        """Where tool executors record each call's outcome at once (set with a checkpointer)."""

    # ------------------------------------------------------------------ keys
    def _resolve(self, key: str, namespace: str | None) -> tuple[str, FieldSpec | None, bool]:
        """(storage key, field spec, is_extra) for a logical key in a namespace (memoised)."""
        cached = self._resolved.get((key, namespace))
        if cached is None:
            cached = self._resolved[(key, namespace)] = self._resolve_uncached(key, namespace)
            if namespace is None and not cached[2]:
                self._plain[key] = (cached[0], cached[1])
        return cached

    def _resolve_uncached(self, key: str, namespace: str | None) -> tuple[str, FieldSpec | None, bool]:
        spec = self._spec.by_key.get(key)
        if namespace:
            name = spec.name if spec is not None else key
            return f"{namespace}.{name}", spec, True
        if spec is not None:
            return spec.name, spec, False
        if not self._spec.allows_extra:
            raise StateError(
                f"state schema {self.schema.__name__} has no field {key!r} and does not allow extra "
                f"keys (fields: {', '.join(self._spec.fields)}); add the field or set "
                "model_config = ConfigDict(extra='allow')"
            )
        return key, None, True

    def _extra(self) -> dict[str, Any]:
        extra = self.state.__pydantic_extra__
        if extra is None:
            raise StateError(
                f"namespaced keys need extra storage: give {self.schema.__name__} "
                "model_config = ConfigDict(extra='allow')"
            )
        return extra

    # ------------------------------------------------------------------ read
    def get(self, key: str, namespace: str | None = None, default: Any = None) -> Any:
        """The value of `key` (in `namespace`); a namespaced key not yet written reads as the
        default of the schema field of the same name, else `default`."""
        if namespace is None:
            plain = self._plain.get(key)
            if plain is not None:
                return self.state.__dict__[plain[0]]
        resolved = self._resolved.get((key, namespace))
        if resolved is None:
            resolved = self._resolve(key, namespace)
        storage, spec, is_extra = resolved
        if not is_extra:
            return self.state.__dict__[storage]
        value = self._extra().get(storage, _MISSING)
        if value is _MISSING:
            return spec.fresh_default() if spec is not None else default
        return value

    def get_optional(self, key: str, namespace: str | None = None) -> Any:
        """The value of `key`, or None where the state schema lacks it (a run input added after
        a custom schema was written: `client_tools`, `output_schema`). Read once or twice per
        model call, so the common case (a plain field) is `get`'s fast path, inlined."""
        if namespace is None:
            plain = self._plain.get(key)
            if plain is not None:
                return self.state.__dict__[plain[0]]
        try:
            return self.get(key, namespace)
        except (KeyError, AttributeError):
            return None

    # ------------------------------------------------------------------ write
    def update(self, updates: Mapping[str, Any], namespace: str | None = None) -> None:
        """Merge `updates` into the state through each field's reducer."""
        # `_write` inlined for the common case (a schema field with no namespace): the ReAct
        # loop makes about ten writes per iteration.
        if namespace is not None:
            for key, value in updates.items():
                self._write(key, value, namespace, reduce=True)
            return
        plain_keys = self._plain
        fields = self.state.__dict__
        for key, value in updates.items():
            plain = plain_keys.get(key)
            if plain is None:
                self._write(key, value, namespace, reduce=True)
                continue
            storage, spec = plain
            self.version += 1
            if spec is not None and spec.reducer is not None:
                current = fields[storage]
                if spec.append_in_place and type(current) is list:
                    current.extend(value)
                    continue
                value = spec.reducer(current, value)
            fields[storage] = value

    def clear(self, keys: Iterable[str], namespace: str | None = None) -> None:
        """Empty the containers held by `keys` (bypassing reducers); keys already empty keep
        theirs, so a batch's end creates no container it does not need."""
        for key in keys:
            plain = self._plain.get(key) if namespace is None else None
            if plain is not None:
                fields = self.state.__dict__
                current = fields[plain[0]]
                if current:
                    self.version += 1
                    fields[plain[0]] = type(current)()
                continue
            current = self.get(key, namespace)
            if current:
                self._write(key, type(current)(), namespace, reduce=False)

    def set(self, key: str, value: Any, namespace: str | None = None) -> None:
        """Replace the value of `key`, bypassing its reducer."""
        self._write(key, value, namespace, reduce=False)

    def _write(self, key: str, value: Any, namespace: str | None, *, reduce: bool) -> None:
        resolved = self._resolved.get((key, namespace))
        if resolved is None:
            resolved = self._resolve(key, namespace)
        storage, spec, is_extra = resolved
        target = self._extra() if is_extra else self.state.__dict__
        self.version += 1
        if reduce and spec is not None and spec.reducer is not None:
            current = target.get(storage, _MISSING)
            if current is _MISSING:
                current = spec.fresh_default()
            if spec.append_in_place and type(current) is list:
                current.extend(value)
                value = current
            else:
                value = spec.reducer(current, value)
        target[storage] = value

    # ------------------------------------------------------------------ lifetimes
    def reset_ephemeral(self, scope: Scope, namespace: str | None = None) -> None:
        """Reset the `scope`-ephemeral fields of one namespace (None: the top level)."""
        resets = self._resets((scope,))
        if not resets:
            return
        self.version += 1
        if namespace is None:
            _apply_resets(self.state.__dict__, resets)
            return
        extra = self._extra()
        for name, _, _ in resets:
            extra.pop(f"{namespace}.{name}", None)

    def reset_for_run(self) -> None:
        """A fresh run: reset run- and step-scoped fields everywhere, namespaces included."""
        resets = self._resets(("run", "step"))
        if resets:
            self.version += 1
        _apply_resets(self.state.__dict__, resets)
        extra = self.state.__pydantic_extra__
        if not extra:
            return
        names = {name for name, _, _ in resets}
        for key in [k for k in extra if "." in k and k.rsplit(".", 1)[1] in names]:
            del extra[key]

    def namespaces(self) -> frozenset[str]:
        """Namespaces that currently hold at least one key."""
        extra = self.state.__pydantic_extra__ or {}
        return frozenset(k.rsplit(".", 1)[0] for k in extra if "." in k)

    # ------------------------------------------------------------------ wake-up
    def signal(self) -> None:
        """Ask the runner for another tick (see `Wakeup.signal`)."""
        self.wakeup.signal()

    # ------------------------------------------------------------------ persistence
    def snapshot(self) -> dict[str, Any]:
        """The whole state, namespaced keys included, as JSON-compatible data."""
        return self.state.model_dump(mode="json")

    def restore(self, snapshot: Mapping[str, Any]) -> None:
        """Replace the state with a snapshot, validating it (ephemeral values are kept)."""
        self.state = self.validate_snapshot(snapshot)
        self.version += 1

    def validate_snapshot(self, snapshot: Mapping[str, Any]) -> BaseModel:
        """Build a state model from snapshot data; raises StateError when it does not fit."""
        fields = self._spec.fields
        data = {k: v for k, v in snapshot.items() if k in fields or k not in _namespaced(snapshot)}
        try:
            state = self.schema.model_validate(data)
            extra = state.__pydantic_extra__
            for key in _namespaced(snapshot):
                name = key.rsplit(".", 1)[1]
                value = snapshot[key]
                if name in fields:
                    value = _adapter(self.schema, name).validate_python(value)
                if extra is None:
                    raise StateError(f"snapshot has namespaced key {key!r} but the schema forbids extras")
                extra[key] = value
        except (ValueError, TypeError) as exc:
            raise StateError(f"snapshot does not fit state schema {self.schema.__name__}: {exc}") from exc
        return state

    def _resets(self, scopes: tuple[Scope, ...]) -> list[tuple[str, str, Any]]:
        resets = _RESETS.get((self.schema, scopes))
        if resets is None:
            resets = _RESETS[(self.schema, scopes)] = _resets(self._spec, scopes)
        return resets

    def copy_state(self) -> BaseModel:
        """A copy safe to hand to callers: containers are copied, immutable items shared."""
        copied = self.state.model_copy()  # shallow: fields set, extras and privates carried over
        _copy_containers(copied.__dict__)
        extra = copied.__pydantic_extra__
        if extra:
            _copy_containers(extra)
        return copied


def _resets(spec: SchemaSpec, scopes: tuple[Scope, ...]) -> list[tuple[str, str, Any]]:
    """(field, how, value) for every ephemeral field of `scopes`: `_ASSIGN` an immutable
    default (`value`, shared like pydantic shares it), `_EMPTY` a list/dict factory (`value`; an
    empty container of the field's own is kept: what a reset would give), `_FRESH` anything else
    (`value` is the FieldSpec, whose `fresh_default()` is called)."""
    resets: list[tuple[str, str, Any]] = []
    for field in spec.fields.values():
        if field.scope not in scopes:
            continue
        factory, default = field.default_factory, field.default
        if factory is None and not isinstance(default, (list, dict, set)):
            resets.append((field.name, _ASSIGN, default))  # fresh_default() returns it as is
        elif factory is list or factory is dict:
            resets.append((field.name, _EMPTY, factory))
        elif factory is not None and _immutable_model(factory):
            resets.append((field.name, _ASSIGN, factory()))  # e.g. Usage(): one zero for all
        else:
            resets.append((field.name, _FRESH, field))
    return resets


def _apply_resets(fields: dict[str, Any], resets: list[tuple[str, str, Any]]) -> None:
    for name, how, value in resets:
        if how is _ASSIGN:
            fields[name] = value
        elif how is _EMPTY:
            current = fields.get(name)
            if type(current) is not value or current:
                fields[name] = value()
        else:
            fields[name] = value.fresh_default()


def _immutable_model(factory: Any) -> bool:
    """A frozen pydantic model of scalar fields only (e.g. `Usage`): its instances can be shared."""
    if not (isinstance(factory, type) and issubclass(factory, BaseModel)):
        return False
    config = factory.model_config
    if not config.get("frozen") or config.get("extra") == "allow" or factory.__private_attributes__:
        return False
    return all(info.annotation in _SCALARS for info in factory.model_fields.values())


def _namespaced(snapshot: Iterable[str]) -> set[str]:
    return {k for k in snapshot if "." in k}


def _copy_containers(values: dict[str, Any]) -> None:
    """Replace the lists and dicts among `values` by shallow copies (in place)."""
    for key, value in values.items():
        kind = type(value)
        if kind is list or kind is dict:
            values[key] = value.copy()
