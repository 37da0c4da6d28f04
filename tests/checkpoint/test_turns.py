"""Turns: one run's writes land in the order they were made, and a writer cancelled while it
waits (or just as its turn came) never blocks the writers behind it."""

from __future__ import annotations

import asyncio

from jianmu_like.checkpoint._turns import Turns


async def test_writes_go_in_ticket_order_and_a_cancelled_one_is_passed_by() -> None:
    turns = Turns()
    order: list[str] = []
    first = turns.take()
    await turns.wait(first)  # nobody before it: no wait

    async def write(name: str, ticket: int) -> None:
        await turns.wait(ticket)
        order.append(name)
        turns.done()

    tickets = {name: turns.take() for name in ("b", "gone", "c", "late", "d")}
    tasks = {name: asyncio.ensure_future(write(name, t)) for name, t in tickets.items()}
    await asyncio.sleep(0)  # all of them waiting now
    tasks["gone"].cancel()  # before its turn
    order.append("a")
    turns.done()  # "a" is done: "b" goes, "gone" is passed by, then "c"
    await asyncio.wait_for(asyncio.gather(*(t for n, t in tasks.items() if n != "gone")), 60)
    assert order == ["a", "b", "c", "late", "d"]
    assert tasks["gone"].cancelled()


async def test_a_writer_cancelled_as_its_turn_came_passes_it_on() -> None:
    turns = Turns()
    first, second, third = turns.take(), turns.take(), turns.take()
    await turns.wait(first)
    waiting = asyncio.ensure_future(turns.wait(second))
    after = asyncio.ensure_future(turns.wait(third))
    await asyncio.sleep(0)
    turns.done()  # second's turn comes ...
    waiting.cancel()  # ... and it is cancelled before it could run
    await asyncio.wait_for(after, 60)  # third's turn came all the same
    assert waiting.cancelled()
