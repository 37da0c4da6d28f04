"""The one wording of a missing optional extra: a feature whose packages come with an extra
(`postgres`, `durable`, `otel`, `local`...) says which extra to install when they are not there.

A plain `pip install jianmu_like` has none of them; the modules of such a feature import their
packages at the top, inside `try`, and raise `missing_extra(...)` from the `ImportError`, so the
first thing a user reads is the install command, not `No module named 'psycopg'`.
"""

from __future__ import annotations

from ..errors import JianmuError


class MissingExtraError(ModuleNotFoundError, JianmuError):
    """A feature's optional packages are not installed; the message names the extra that brings
    them. A `ModuleNotFoundError`, so `except ImportError` still catches it."""


def missing_extra(extra: str, feature: str, cause: ImportError) -> MissingExtraError:
    """The error to raise (`from cause`) where `feature` imports a package of `extra` that is not
    installed."""
    return MissingExtraError(
        f"{feature} needs the `{extra}` extra: pip install 'jianmu_like[{extra}]' ({cause})",
        name=cause.name,
    )
