"""`server._idempotency` in-process: which requests name a run (a key, an SDK's retry), what a
key may be, and how long each names its run (`WINDOW` for a key, `RETRY_WINDOW` for a retry)."""

from __future__ import annotations

import pytest

from jianmu_like.server._idempotency import (
    RETRY_WINDOW,
    WINDOW,
    IdempotencyKeys,
    Remembered,
    identify,
)
from jianmu_like.server._openai_compat import ChatCompletionRequest
from jianmu_like.server._openai_errors import OpenAIError

BODY = ChatCompletionRequest.model_validate({"model": "m", "messages": [{"role": "user", "content": "hi"}]})


def test_what_names_a_run() -> None:
    assert identify({}, BODY) is None  # no key, no SDK: nothing to follow
    first = identify({"x-stainless-retry-count": "0"}, BODY)
    retry = identify({"x-stainless-retry-count": "1"}, BODY)
    assert first is not None and retry is not None
    assert not first.attach and retry.attach and first.key == retry.key  # the body names it
    keyed = identify({"idempotency-key": "abc", "x-stainless-retry-count": "0"}, BODY)
    assert keyed is not None and keyed.attach and keyed.explicit and keyed.key != first.key
    # Spacing and key order do not make another body.
    same = ChatCompletionRequest.model_validate_json(
        '{"messages": [{"content": "hi", "role": "user"}], "model": "m"}'
    )
    assert identify({"x-stainless-retry-count": "1"}, same).key == retry.key  # type: ignore[union-attr]


@pytest.mark.parametrize("key", ["", "k" * 256, "clé", "a\tb"])
def test_a_bad_key_is_a_400_naming_the_header(key: str) -> None:
    with pytest.raises(OpenAIError) as caught:
        identify({"idempotency-key": key}, BODY)
    assert caught.value.status == 400 and caught.value.param == "Idempotency-Key"
    assert caught.value.code == "invalid_idempotency_key"


async def test_a_key_names_its_run_for_the_window_and_a_retry_for_an_hour() -> None:
    now = [1000.0]
    keys = IdempotencyKeys(lambda: None, clock=lambda: now[0])
    keyed = identify({"idempotency-key": "abc"}, BODY)
    retry = identify({"x-stainless-retry-count": "2"}, BODY)
    assert keyed is not None and retry is not None
    for identity in (keyed, retry):
        keys.memory[identity.key] = Remembered("run", "thread", identity.fingerprint, now[0])
    now[0] += RETRY_WINDOW + 1
    assert await keys.find(keyed) is not None and await keys.find(retry) is None
    now[0] += WINDOW
    assert await keys.find(keyed) is None


async def test_a_key_with_another_body_is_refused() -> None:
    keys = IdempotencyKeys(lambda: None)
    keyed = identify({"idempotency-key": "abc"}, BODY)
    assert keyed is not None
    keys.memory[keyed.key] = Remembered("run", "thread", "another body", keys.clock())
    with pytest.raises(OpenAIError) as caught:
        async with keys.claim(keyed):
            pass
    assert caught.value.code == "idempotency_key_reused" and caught.value.status == 400
    assert keys._locks == {}  # the claim let go of the key
