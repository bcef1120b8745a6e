"""``MessageGeneric``: a base class that is ``typing.Generic`` to a type checker and nothing at
run time (internal)."""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["MessageGeneric"]

if TYPE_CHECKING:
    from typing import Generic as MessageGeneric
else:

    class _ErasedGeneric:
        """``MessageGeneric[MessageT]`` as a base class: ``typing.Generic`` to a type checker,
        nothing at run time (the subscript gives ``object``). A ``Generic`` base costs about
        10 instructions per instance (benches/callgrind_events.py), and the event classes
        are made for every event; a class using this sets ``__class_getitem__`` itself, so
        that ``AgentEvent[AgenticMessage]`` still works in annotations at run time."""

        __slots__ = ()

        def __getitem__(self, params: object) -> type:
            return object

    MessageGeneric = _ErasedGeneric()
