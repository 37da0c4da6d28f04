"""Errors raised by model providers and the ModelClient."""

from __future__ import annotations

from typing import Any, ClassVar

from ..errors import JianmuError


class ModelError(JianmuError):
    """A model call failed. `retryable` marks 429/5xx/timeouts/connection and read errors,
    unparsable answers and streams cut short; `retry_after` is the server's `Retry-After`
    (seconds), which the client's backoff honours."""

    failure_kind: ClassVar[str] = "model_error"
    """How a run that ends on this error names its termination (see `bt._fault`)."""

    def __init__(
        self,
        message: str,
        *,
        model: str | None = None,
        status_code: int | None = None,
        retryable: bool = False,
        base_url: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.model = model
        self.status_code = status_code
        self.retryable = retryable
        self.base_url = base_url
        self.retry_after = retry_after

    def __reduce__(self) -> tuple[Any, ...]:
        """Picklable, every attribute kept, whatever the subclass's constructor takes: a durable
        run (jianmu_like.durable) records a failed call and raises it again on replay."""
        return (_restore, (type(self), self.message, dict(self.__dict__)))

    def __str__(self) -> str:
        parts = [self.message]
        if self.status_code is not None:
            parts.append(f"status={self.status_code}")
        if self.model:
            parts.append(f"model={self.model}")
        if self.base_url and self.base_url not in self.message:  # said once
            parts.append(f"url={self.base_url}")
        return " ".join(parts)


class ModelCallFailed(ModelError):
    """Every attempt of a logical call failed (after retries and fallback models)."""

    def __init__(self, message: str, *, attempts: list[ModelError]) -> None:
        last = attempts[-1] if attempts else None
        super().__init__(
            message,
            model=last.model if last else None,
            status_code=last.status_code if last else None,
            retryable=False,
            base_url=last.base_url if last else None,
        )
        self.attempts = attempts


def _restore(cls: type[ModelError], message: str, state: dict[str, Any]) -> ModelError:
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.__dict__.update(state)
    return error
