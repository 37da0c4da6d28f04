"""Serve agents over HTTP: runs, their events as Server-Sent Events, follow-ups and approvals.

Needs Starlette, uvicorn and sse-starlette (`pip install 'jianmu_like[serve]'`); the rest of the
framework never imports this package.
"""

from .app import create_app
from .channels import CHANNELS, ChannelMapper
from .nodes import NodeWatcher, tree_json
from .runs import RunRegistry
from .security import TOKEN_ENV, InsecureBindError, check_bind, is_loopback

__all__ = [
    "CHANNELS",
    "TOKEN_ENV",
    "ChannelMapper",
    "InsecureBindError",
    "NodeWatcher",
    "RunRegistry",
    "check_bind",
    "create_app",
    "is_loopback",
    "tree_json",
]
