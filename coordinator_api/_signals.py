"""SIGTERM as a way out that leaves the group: what services need from process managers.

Python ends a process on SIGTERM without running ``finally`` clauses or ``with`` exits, so a
member killed that way does not leave its group: the others wait out its session before they
rebalance (a leader election stays without a leader that long). Ctrl-C raises
KeyboardInterrupt, which does run them. :func:`exit_on_sigterm` makes SIGTERM behave alike.
"""

from __future__ import annotations

import queue
import signal
import threading
from types import FrameType

from coordinator_api._errors import ConfigurationError

__all__ = ["exit_on_sigterm"]

#: The exit status of a process ended by SIGTERM, as shells report it.
SIGTERM_EXIT_STATUS = 128 + signal.SIGTERM


def exit_on_sigterm() -> None:
    """From now on SIGTERM raises ``SystemExit(143)`` in the main thread, as Ctrl-C raises
    KeyboardInterrupt: ``with`` blocks and ``finally`` clauses run, so every member (a
    :class:`~coordinator_api.Coordinator`, a ``LeaderElection``, a ``ConsumerGroupMember``...)
    closed by them leaves its group gracefully and its peers rebalance at once. Call it once,
    from the main thread, before the members start::

        from coordinator_api import exit_on_sigterm
        from coordinator_leader import LeaderElection

        exit_on_sigterm()
        with LeaderElection("jobs", "127.0.0.1:9092", "worker-1") as election:
            ...  # SIGTERM (systemd, Kubernetes, docker stop) now leaves the group on the way out

    :raises ConfigurationError: when called from another thread (Python runs signal handlers
        in the main thread only).
    """
    if threading.current_thread() is not threading.main_thread():
        raise ConfigurationError("exit_on_sigterm() must be called from the main thread")
    signal.signal(signal.SIGTERM, _exit)


def _exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(SIGTERM_EXIT_STATUS)


def stop_event(*signals: signal.Signals) -> threading.Event:
    """An Event that is set when one of ``signals`` arrives: how a member process's main loop
    learns that it is asked to stop, and can then close its members itself.

    The handler does not set the Event: Python runs a handler in the main thread between two
    bytecodes, possibly while that thread holds the Event's lock inside ``wait()``, and ``set()``
    would then wait for that lock forever. It only puts the signal on a :class:`queue.SimpleQueue`,
    whose ``put()`` is reentrant, and a daemon thread sets the Event.
    """
    if threading.current_thread() is not threading.main_thread():
        raise ConfigurationError("stop_event() must be called from the main thread")
    stop = threading.Event()
    arrived: queue.SimpleQueue[int] = queue.SimpleQueue()

    def relay() -> None:
        while True:
            arrived.get()
            stop.set()

    threading.Thread(target=relay, name="stop-on-signal", daemon=True).start()
    for sig in signals:
        signal.signal(sig, lambda signum, _frame: arrived.put(signum))
    return stop
