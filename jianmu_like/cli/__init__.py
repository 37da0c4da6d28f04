"""The `jianmu-like` command: run, resume, show, validate, approvals, config, models."""

from .main import main

__all__ = ["main"]
