"""Property: any sequence of channel operations behaves like a FIFO deque (single thread)."""

from __future__ import annotations

from collections import deque

from hypothesis import given
from hypothesis import strategies as st
from rillet import EMPTY, Channel, ChannelClosed

items = st.integers() | st.text(max_size=3) | st.none() | st.tuples(st.integers())

operations = st.lists(
    st.one_of(
        st.tuples(st.just("send"), items),
        st.tuples(st.just("send_many"), st.lists(items, max_size=5)),
        st.tuples(st.just("try_recv"), st.none()),
        st.tuples(st.just("recv_many"), st.integers(min_value=1, max_value=6)),
        st.tuples(st.just("close"), st.none()),
    ),
    max_size=40,
)


@given(operations)
def test_channel_matches_a_deque_model(ops: list[tuple[str, object]]) -> None:
    ch: Channel[object] = Channel()
    model: deque[object] = deque()
    closed = False
    for op, arg in ops:
        if op == "send":
            assert ch.try_send(arg) is not closed
            if not closed:
                model.append(arg)
        elif op == "send_many":
            assert isinstance(arg, list)
            if closed:
                continue
            ch.send_many(arg)
            model.extend(arg)
        elif op == "try_recv":
            if closed and not model:
                try:
                    ch.try_recv()
                except ChannelClosed:
                    continue
                raise AssertionError("a drained, closed channel must raise")
            got = ch.try_recv()
            assert got is EMPTY if not model else got == model.popleft()
        elif op == "recv_many":
            assert isinstance(arg, int)
            if not model:
                continue  # would block (open) or raise (closed): covered elsewhere
            expected = [model.popleft() for _ in range(min(arg, len(model)))]
            assert ch.recv_many(arg) == expected
        elif op == "close":
            ch.close()
            closed = True
        assert len(ch) == len(model)
        assert ch.closed is closed
    if model or not closed:
        assert ch.try_recv_many(1000) == list(model)
