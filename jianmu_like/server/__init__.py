"""Serve agents over HTTP: runs, their events as Server-Sent Events, follow-ups and approvals.

Needs Starlette, uvicorn and sse-starlette (`pip install 'jianmu_like[serve]'`); the rest of the
framework never imports this package.
"""

from ._a2a import A2ACard, A2ASkill
from ._app import create_app
from ._channels import CHANNELS, ChannelMapper
from ._nodes import NodeWatcher, tree_json
from ._runs import RunRegistry
from ._security import TOKEN_ENV, InsecureBindError, check_bind, is_loopback

__all__ = [
    "CHANNELS",
    "TOKEN_ENV",
    "A2ACard",
    "A2ASkill",
    "ChannelMapper",
    "InsecureBindError",
    "NodeWatcher",
    "RunRegistry",
    "check_bind",
    "create_app",
    "is_loopback",
    "tree_json",
]
