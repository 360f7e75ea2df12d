"""Event tables: how the member machines and the coordinator's group state find the handler of
an event (STYLE habit 10, as h11 keeps its transitions in tables).

A table is built from :func:`on` rows, one per event type; mypy checks that each row's handler
takes that row's event type and the table's further arguments, and the table refuses, when its
module is imported, to miss an event of the machine's union or to name one twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, get_args

_Machine = TypeVar("_Machine")
_E = TypeVar("_E")
_Args = ParamSpec("_Args")


@dataclass(frozen=True)
class EventRow(Generic[_Machine, _Args]):
    """One row of an event table; made by :func:`on`."""

    event_type: type[Any]
    handler: Callable[Concatenate[_Machine, Any, _Args], None]


def on(
    event_type: type[_E], handler: Callable[Concatenate[_Machine, _E, _Args], None]
) -> EventRow[_Machine, _Args]:
    """One row of an event table: mypy checks that ``handler`` takes ``event_type`` (the row's
    type does not name the event, so the table around it cannot loosen the check)."""
    return EventRow(event_type, handler)


class EventTable(Generic[_Machine, _Args]):
    """A machine's events and their handlers: every type of the union ``events`` once."""

    def __init__(self, events: object, *rows: EventRow[_Machine, _Args]) -> None:
        self._handlers = {row.event_type: row.handler for row in rows}
        wanted = set(get_args(events))
        missing, extra = wanted - self._handlers.keys(), self._handlers.keys() - wanted
        if missing or extra or len(self._handlers) != len(rows):
            names = sorted(t.__name__ for t in missing | extra)
            raise TypeError(f"an event table must give every event one handler: {names or 'a row twice'}")

    def handler(self, event: object) -> Callable[Concatenate[_Machine, Any, _Args], None]:
        """The handler of ``event``'s type, to call with the machine, the event and the table's
        further arguments (returned, not called here: a request path pays no argument packing)."""
        return self._handlers[type(event)]
