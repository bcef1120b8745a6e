"""The (EventIterator, EventGenerator) pair an agent run is built on."""

from __future__ import annotations

import asyncio
import pydoc
import threading

import pytest
from rillet import Channel, ChannelClosed, EventGenerator, EventIterator, new_event_pair


def test_events_flow_from_generator_to_iterator_in_order() -> None:
    it, gen = new_event_pair()
    assert isinstance(it, EventIterator) and isinstance(gen, EventGenerator)
    for i in range(3):
        assert gen.send(i) is True
    gen.close()
    assert list(it) == [0, 1, 2]


def test_async_iteration_and_batches() -> None:
    async def main() -> tuple[list[int], list[int]]:
        it, gen = new_event_pair()

        def produce() -> None:
            for i in range(100):
                gen.send(i)
            gen.close()

        threading.Thread(target=produce).start()
        first = await it.arecv_many(10)
        rest = [x async for x in it]
        return first, rest

    first, rest = asyncio.run(main())
    assert 1 <= len(first) <= 10
    assert first + rest == list(range(100))


def test_sends_after_close_are_dropped_silently() -> None:
    it, gen = new_event_pair()
    gen.send("kept")
    gen.close()
    assert gen.closed
    assert gen.send("late") is False  # an abandoned producer is not failed
    assert it.recv() == "kept"
    with pytest.raises(ChannelClosed):
        it.recv()


def test_close_with_error_is_raised_after_the_queued_events() -> None:
    it, gen = new_event_pair()
    gen.send(1)
    gen.close(RuntimeError("model failed"))
    assert it.recv_many(5) == [1]
    with pytest.raises(RuntimeError, match="model failed"):
        next(iter(it))


def test_recv_with_timeout() -> None:
    it, _gen = new_event_pair()
    with pytest.raises(TimeoutError):
        it.recv(timeout=0.01)
    assert "EventIterator" in repr(it)


def test_a_send_after_close_returns_false_and_never_raises() -> None:
    it, gen = new_event_pair()
    assert gen.send(1) is True
    gen.close()
    assert gen.closed
    assert gen.send(2) is False
    assert list(it) == [1]


PUBLIC_DUNDERS = {"__iter__", "__next__", "__aiter__", "__anext__", "__len__"}


@pytest.mark.parametrize("cls", [Channel, EventIterator, EventGenerator], ids=lambda c: c.__name__)
def test_help_explains_every_public_method(cls: type) -> None:
    assert cls.__doc__ and len(cls.__doc__) > 40
    shown = pydoc.render_doc(cls, renderer=pydoc.plaintext)
    for name in dir(cls):
        if (name.startswith("_") and name not in PUBLIC_DUNDERS) or name not in vars(cls):
            continue  # private, or inherited from object / Generic
        doc = (getattr(cls, name).__doc__ or "").strip()
        assert len(doc) > 10, f"{cls.__name__}.{name} has no docstring"
        assert doc.splitlines()[-1].strip() in shown, f"help() does not show {name}'s docstring"
