"""The embedded model's llama.cpp HTTP API is out of reach: xllamacpp always starts it, and
nothing but this process may use it (no TCP port; a private Unix socket behind a secret key).
On the real default model, where xllamacpp is installed and the weights are pulled."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import httpx
import pytest
from test_local_smoke import REASON  # the default backend is xllamacpp: one availability rule

from jianmu_like import human
from jianmu_like.models import ModelRequest, weights
from jianmu_like.models._local_provider import LlamaCppProvider
from jianmu_like.models.local_backends import XllamacppBackend

pytestmark = [pytest.mark.local, pytest.mark.skipif(REASON is not None, reason=REASON or "")]


def _listening_tcp_inodes() -> set[str]:
    """Socket inodes of this process that listen on TCP (IPv4 or IPv6)."""
    listening: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as handle:
            for line in handle.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A":  # TCP_LISTEN
                    listening.add(fields[9])
    ours: set[str] = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            ours.add(target[8:-1])
    return listening & ours


def _client(address: str) -> httpx.Client:
    """An HTTP client for llama.cpp's API wherever it listens (a Unix socket or a TCP port)."""
    if address.startswith("unix://"):
        transport = httpx.HTTPTransport(uds=address.removeprefix("unix://"))
        return httpx.Client(transport=transport, base_url="http://llama", timeout=60)
    return httpx.Client(base_url=address, timeout=60)


async def test_the_embedded_models_http_api_refuses_everyone_but_the_agent_still_answers() -> None:
    spec = weights.spec_of(None)
    path = weights.local_model_path()
    assert path is not None
    provider = LlamaCppProvider(path, chat_format=spec.chat_format, system_role=spec.system_role)
    backend = provider.backend
    assert isinstance(backend, XllamacppBackend)
    before = _listening_tcp_inodes()
    await provider.load()
    address = backend.listening_address
    assert address is not None
    try:
        # an unauthenticated caller (another local process, a web page) gets nothing
        chat = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}
        with _client(address) as http:
            assert http.post("/v1/chat/completions", json=chat).status_code == 401
            assert http.post("/completion", json={"prompt": "hi", "n_predict": 3}).status_code == 401
            assert http.get("/props").status_code == 401
            assert http.get("/v1/models").status_code == 401
        # no TCP port at all: a private Unix socket, in a folder only we may enter
        assert _listening_tcp_inodes() == before
        assert address.startswith("unix://")
        folder = Path(address.removeprefix("unix://")).parent
        mode = folder.stat()
        assert stat.S_IMODE(mode.st_mode) == 0o700 and mode.st_uid == os.getuid()
        # the agent's own requests go in-process and are answered
        request = ModelRequest(messages=[human("Say hello.")], max_tokens=8)
        response = await provider.chat(request, model="local")
        assert response.message.content and response.usage.completion_tokens > 0
    finally:
        await provider.aclose()
    assert not folder.exists()  # closing removes the socket's folder
