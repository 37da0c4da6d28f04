"""A replies file: the scripted model's side of a conversation written as YAML or JSON, so a user
can try an agent and their own tools offline without writing Python (`jianmu-like mock`).

```yaml
model: mock-model        # the name /v1/models serves (optional)
repeat: false            # start over when the replies run out (default: a 500 saying so)
replies:
  - tool_calls:
      - name: calculator
        arguments: {expression: "25 * 4 + 10"}
  - "The answer is 110."  # a string is a text reply
```

Each reply is a mapping of `ScriptedReply`'s fields (`content`, `tool_calls`, `reasoning_content`,
`finish_reason`, `usage`, `error_status`, `delay`...) or a string. The file is checked whole
before anything is served: every problem is reported with its line, a misspelt key with the
closest real one, so a typo never becomes a reply that silently lacks its tool call.
"""

from __future__ import annotations

import itertools
import json
import threading
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from .._base.sources import SourceError, describe_errors, load_yaml
from ._script import Script, ScriptedReply

DEFAULT_MODEL = "mock-model"


def _text_reply(value: Any) -> Any:
    """A string is shorthand for a text reply."""
    return {"content": value} if isinstance(value, str) else value


class RepliesFile(BaseModel):
    """The parsed file (see the module)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(default=DEFAULT_MODEL, min_length=1)
    """The model name `GET /v1/models` serves: a client with no model configured uses it."""
    repeat: bool = False
    """Start over from the first reply once the last is served (a demo that runs many times)."""
    replies: list[Annotated[ScriptedReply, BeforeValidator(_text_reply)]] = Field(min_length=1)

    @classmethod
    def load(cls, path: str | Path) -> RepliesFile:
        """Read and check `path` (`.json`: JSON; anything else: YAML); `SourceError` lists every
        problem with its line."""
        file = Path(path)
        if file.suffix.lower() == ".json":
            try:
                data: Any = json.loads(file.read_text(encoding="utf-8"))
            except OSError as exc:
                raise SourceError([f"{file}: cannot read: {exc.strerror or exc}"]) from None
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise SourceError([f"{file}: not a JSON document: {exc}"]) from None
            where: Any = lambda loc: str(file)  # noqa: E731 - JSON keeps no line numbers here
            problems: list[str] = []
        else:
            doc = load_yaml(file)
            data, where, problems = doc.data, doc.where, list(doc.problems)
        if isinstance(data, list):
            data = {"replies": data}
        if not isinstance(data, dict):
            raise SourceError([f"{file}: expected a mapping with `replies`, or a list of replies"])
        try:
            parsed = cls.model_validate(data)
        except ValidationError as exc:
            raise SourceError(problems + describe_errors(exc, where=where, model=cls)) from None
        if problems:  # duplicate keys
            raise SourceError(problems)
        return parsed

    def script(self) -> Script:
        """The replies in order, or over and over (`repeat`)."""
        if not self.repeat:
            return Script(self.replies)
        cycle, lock = itertools.cycle(self.replies), threading.Lock()

        def next_reply(body: dict[str, Any]) -> ScriptedReply:
            with lock:
                return next(cycle)

        return Script(next_reply)
