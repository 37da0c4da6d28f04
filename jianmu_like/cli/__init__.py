"""The `jianmu-like` command: run, resume, show, validate, approvals, config, models."""

from ._main import main

__all__ = ["main"]
