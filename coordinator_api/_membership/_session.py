"""A member's session in its group: the one object the application side talks to.

:class:`MembershipSession` owns the member state machine, the :class:`~._driver.MemberDriver`
that runs it (its lock, its heartbeat thread, the queue of callbacks for the application's
thread) and the membership layer's one clock. ``Coordinator`` keeps the user's callbacks and
calls this small API; it never takes the lock nor reads the machine.

One rebalance, as the application's thread sees it::

    session.record_poll()                  # take part: a member outside the group joins
    request = session.next_action()        # PrepareJoin: on_join_prepare (if revoke), metadata()
    session.report_revoked(request, ok=True)
    session.report_metadata(request, protocols)        # -> JoinGroup
    request = session.next_action()        # Assign, on the leader only: perform_assignment()
    session.report_assignment(request, assignments)    # -> SyncGroup
    request = session.next_action()        # Complete: on_join_complete()
    session.report_completed(request, ok=True)
    session.stable_generation()            # the generation, while its lease holds

Rules:

* **Only wanted requests.** A callback request is handed out only while the machine still
  waits for it: one whose generation is gone (lost, left, fenced) is dropped, and a report
  about a request the machine no longer waits for is ignored.
* **The lease is always checked** against the clock: :meth:`stable_generation` and
  :meth:`wait_until_stable` say no once it has run out, even before the heartbeat thread
  noticed, and an assignment whose lease ran out before the application took it is refused
  here (the member rejoins) rather than handed to ``on_join_complete``.
* **One clock.** Times are milliseconds of the session's clock (:meth:`now_ms`); deadlines are
  readings of it. Nothing else in the membership layer reads a clock.

The same session runs either protocol's machine (:class:`SessionMachine`): the classic one
above, or the incremental one (KIP-848), whose only callback request is :class:`Reconcile`
(revoke what is gone, then start what is new), answered with :meth:`report_reconciled`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from coordinator_api._errors import CoordinatorClosedError
from coordinator_api._membership._driver import (
    CONNECTION_OPTIONS,
    ApplicationAction,
    ClassicWire,
    Clock,
    MemberDriver,
    Wire,
    monotonic_ms,
)
from coordinator_api._membership._group_heartbeat import GroupSubscription, IncrementalWire
from coordinator_api._membership._incremental import (
    IncrementalMachine,
    IncrementalSettings,
    Reconcile,
    Reconciled,
)
from coordinator_api._membership._machine import (
    Action,
    Assign,
    AssignmentComputed,
    AssignmentFailed,
    Complete,
    Completed,
    Event,
    Fail,
    JoinWanted,
    LeaveWanted,
    Lost,
    MemberMachine,
    MemberSettings,
    Polled,
    Prepared,
    PrepareFailed,
    PrepareJoin,
    RequestKind,
)
from coordinator_api._membership._offsets import (
    Offsets,
    check_offset_commit,
    fetched_offsets,
    offset_commit_request,
    offset_fetch_request,
)
from coordinator_api._plugins._events import MemberEvent, MemberEventKind
from coordinator_api._types import Generation

__all__ = [
    "CONNECTION_OPTIONS",
    "ApplicationAction",
    "Assign",
    "Complete",
    "Fail",
    "Lost",
    "MemberSettings",
    "MembershipSession",
    "GroupSubscription",
    "IncrementalSettings",
    "PrepareJoin",
    "Reconcile",
]

log = logging.getLogger("coordinator_api.membership")

# While waiting to settle, say at least this often that the application still takes part.
_POLL_EVERY_S = 0.5


class MembershipSession:
    """One member's membership of one group, over a :class:`~._driver.Wire` (kafka-python's
    connections by :meth:`connect`).

    Any thread may ask about the generation; one application thread at a time runs the
    callbacks (:meth:`next_action` and the ``report_*`` methods).

    :param machine: the member's state machine, of either protocol (it holds the member's
        timeouts and identity).
    :param wire: the network edge, of the same protocol.
    :param on_lost: runs on the heartbeat thread when the assignment may already be another
        member's; it must be quick and thread-safe.
    :param observe: receives a :class:`MemberEvent` at each step of the member's life.
    :param clock: milliseconds on a monotonic scale; the only clock the layer reads.
    """

    def __init__(
        self,
        machine: MemberMachine | IncrementalMachine,
        wire: Wire[Any],
        *,
        on_lost: Callable[[Lost], None],
        observe: Callable[[MemberEvent], None] | None = None,
        clock: Clock = monotonic_ms,
    ) -> None:
        self._group_id = machine.settings.group_id
        self._clock = clock
        self._observe = observe
        self._machine = machine
        self._wire = wire
        self._round_started: int | None = None
        self._woken = False
        self._driver: MemberDriver[Any] = MemberDriver(
            machine,
            wire,
            name=self._group_id,
            clock=clock,
            on_lost=on_lost,
            observe=self._emit if observe is not None else None,
        )

    @classmethod
    def connect(
        cls,
        settings: MemberSettings,
        *,
        protocol_type: str,
        connection_options: dict[str, Any],
        request_timeout_ms: int,
        on_lost: Callable[[Lost], None],
        observe: Callable[[MemberEvent], None] | None = None,
    ) -> MembershipSession:
        """A session over kafka-python's connections (``bootstrap_servers`` and the rest in
        ``connection_options``), speaking the classic protocol as ``protocol_type``."""
        wire = ClassicWire(
            settings,
            protocol_type=protocol_type,
            connection_options=connection_options,
            request_timeout_ms=request_timeout_ms,
        )
        return cls(MemberMachine(settings), wire, on_lost=on_lost, observe=observe)

    @classmethod
    def connect_incremental(
        cls,
        settings: IncrementalSettings,
        subscription: GroupSubscription,
        *,
        protocol_type: str = "consumer",
        only_if_served: bool = False,
        connection_options: dict[str, Any],
        request_timeout_ms: int,
        on_lost: Callable[[Lost], None],
        observe: Callable[[MemberEvent], None] | None = None,
    ) -> MembershipSession | None:
        """A session speaking the incremental protocol over kafka-python's connections
        (KIP-848's ConsumerGroupHeartbeat for ``protocol_type`` ``consumer``, this project's
        GroupHeartbeat for any other): the coordinator assigns, the application reconciles.

        :param only_if_served: first ask the group's coordinator whether it serves that API;
            None if it does not.
        :raises Exception: kafka-python's error when ``only_if_served`` and the coordinator
            cannot be reached.
        """
        wire = IncrementalWire(
            settings,
            subscription,
            protocol_type=protocol_type,
            connection_options=connection_options,
            request_timeout_ms=request_timeout_ms,
        )
        try:
            served = not only_if_served or wire.coordinator_serves()
        except BaseException:
            wire.close()
            raise
        if not served:
            wire.close()
            return None
        return cls(IncrementalMachine(settings), wire, on_lost=on_lost, observe=observe)

    # --- the clock ---------------------------------------------------------------------------------

    def now_ms(self) -> int:
        """The session's clock."""
        return self._clock()

    def deadline_after(self, seconds: float | None) -> int | None:
        """The clock's reading ``seconds`` from now (None: no deadline)."""
        return None if seconds is None else self._clock() + int(seconds * 1000)

    # --- the generation (any thread) ---------------------------------------------------------------

    def generation(self) -> Generation:
        """The member's current generation (``NO_GENERATION`` outside the group)."""
        with self._driver.lock:
            return self._machine.generation()

    def stable_generation(self) -> Generation | None:
        """The generation if the member holds a settled assignment it may act on and its lease
        has not run out, else None."""
        with self._driver.lock:
            return self._machine.generation() if self._machine.is_stable(self._clock()) else None

    def holds_assignment(self) -> bool:
        """Whether the application holds an assignment it has not released yet."""
        with self._driver.lock:
            return bool(self._machine.holds_assignment)

    def member_state(self) -> str:
        """The member's state in words (``joining``, ``stable``, ...), for messages."""
        with self._driver.lock:
            return str(self._machine.state.value)

    # --- taking part (application thread) -----------------------------------------------------------

    def record_poll(self) -> None:
        """The application polled: it takes part, so a member outside the group joins again,
        and the max poll interval starts over."""
        self._driver.submit(Polled())

    def resource_owners(self) -> dict[tuple[str, int], tuple[str, bytes]]:
        """Who owns each resource, as the latest answer that listed them said (empty if none,
        or while this member is not in the group)."""
        with self._driver.lock:
            in_group = self._machine.generation().generation_id > 0
        return dict(self._wire.owners) if in_group and isinstance(self._wire, IncrementalWire) else {}

    def request_rejoin(self, reason: str, subscription: GroupSubscription | None = None) -> None:
        """Rejoin at the next chance: a new round of callbacks and a JoinGroup (the incremental
        protocol: a heartbeat now, with ``subscription`` from then on if given)."""
        if subscription is not None and isinstance(self._wire, IncrementalWire):
            self._wire.subscription = subscription  # before the heartbeat that must carry it
        self._driver.submit(JoinWanted(reason))

    def next_action(self) -> ApplicationAction | None:
        """The next callback the application thread must run (or the error it must raise), or
        None if nothing is waiting; never waits. Requests whose generation is gone are dropped,
        and an assignment whose lease ran out is refused here and the member rejoins."""
        while True:
            with self._driver.lock:
                if not self._driver.app_actions:
                    return None
                action = self._driver.app_actions.popleft()
                now = self._clock()
                if isinstance(action, Fail):
                    return action
                if not self._awaits(action):
                    continue  # the generation it belongs to is gone (lost, left, fenced)
                starts = isinstance(action, Complete) or (isinstance(action, Reconcile) and action.assigned)
                if not starts or self._machine.assignment_fresh(now):
                    if isinstance(action, PrepareJoin | Reconcile):
                        self._round_started = now
                    return action
            # Paused (or starved) between the answer and now for longer than the lease: the
            # assignment may already be another member's. Drop it and join again.
            refusal: Event | Reconciled
            if isinstance(action, Reconcile):
                epoch, refusal = action.member_epoch, Reconciled(action, ok=False)
            else:
                assert isinstance(action, Complete)  # only assignments are refused as stale
                epoch = action.generation_id
                refusal = Completed(ok=False, reason="the assignment arrived after the lease ran out")
            log.warning(
                "group %s member %s: generation %d's assignment came too late to act on; rejoining",
                self._group_id,
                action.member_id,
                epoch,
            )
            self._answer(action, refusal)

    def wait_for_action(self, deadline_ms: int) -> bool:
        """Wait until a callback is waiting for the application thread (True), or until
        ``deadline_ms`` or a :meth:`wakeup` (False; a pending wakeup is cleared then)."""
        with self._driver.lock:
            while not self._driver.app_actions:
                remaining = deadline_ms - self._clock()
                if self._woken or remaining <= 0:
                    self._woken = False
                    return False
                self._driver.lock.wait(remaining / 1000)
            return True

    def wait_until_stable(self, deadline_ms: int | None) -> bool:
        """Take part (:meth:`record_poll`) until the member holds a settled assignment it may
        act on and no callback is waiting (True), or until a callback waits for the application
        thread or ``deadline_ms`` passes (False)."""
        while True:
            self.record_poll()
            with self._driver.lock:
                if self._driver.app_actions:
                    return False
                now = self._clock()
                if self._machine.is_stable(now):
                    return True
                if deadline_ms is not None and deadline_ms <= now:
                    return False
                wait_s = (
                    _POLL_EVERY_S if deadline_ms is None else min((deadline_ms - now) / 1000, _POLL_EVERY_S)
                )
                self._driver.lock.wait(wait_s)

    def wakeup(self) -> None:
        """Make a :meth:`wait_for_action` in another thread return now, or the next one at once."""
        with self._driver.lock:
            self._woken = True
            self._driver.lock.notify_all()

    # --- what the callbacks did (application thread) ------------------------------------------------

    def report_revoked(self, request: PrepareJoin, *, ok: bool) -> None:
        """``on_join_prepare`` ran for ``request`` (``ok`` False: it raised; the join goes on)."""
        self._emit(
            "revoked",
            request.generation_id,
            request.member_id,
            None,
            self._since_round_started(),
            "" if ok else "on_join_prepare raised",
        )

    def report_metadata(self, request: PrepareJoin, protocols: Sequence[tuple[str, bytes]] | None) -> None:
        """``metadata()`` ran for ``request``: the protocols to join with, most preferred first,
        or None if it failed (the next round asks again)."""
        self._answer(request, PrepareFailed() if protocols is None else Prepared(tuple(protocols)))

    def report_assignment(self, request: Assign, assignments: Mapping[str, bytes] | None) -> None:
        """The leader's ``perform_assignment`` ran for ``request``: member id -> assignment, or
        None if it failed (the member then leaves, so another member leads)."""
        self._answer(
            request,
            AssignmentFailed()
            if assignments is None
            else AssignmentComputed(tuple(sorted(assignments.items()))),
        )

    def report_completed(self, request: Complete, *, ok: bool) -> bool:
        """``on_join_complete`` ran for ``request`` (``ok`` False: it raised, so the member
        rejoins). False if the membership ended while it ran (the assignment was lost then):
        whatever the callback started must be dropped."""
        accepted = self._answer(request, Completed(ok=ok))
        if accepted and ok:
            self._emit(
                "assigned",
                request.generation_id,
                request.member_id,
                request.protocol_name,
                self._since_round_started(),
                "",
            )
        return accepted

    def report_reconciled(self, request: Reconcile, *, ok: bool) -> bool:
        """The application applied ``request`` (revoked, then started; ``ok`` False: it could
        not, and the member starts over owning nothing). False if the membership ended while
        it ran (the assignment was lost then): whatever the callback started must be dropped."""
        accepted = self._answer(request, Reconciled(request, ok=ok))
        if accepted and ok:
            if request.revoked:
                self._emit("revoked", request.member_epoch, request.member_id, None, None, "")
            self._emit(
                "assigned", request.member_epoch, request.member_id, None, self._since_round_started(), ""
            )
        return accepted

    # --- leaving and closing -------------------------------------------------------------------------

    def leave(self, reason: str, timeout_ms: int) -> None:
        """Send LeaveGroup (also for a static member) and wait up to ``timeout_ms`` for its
        answer; a later :meth:`record_poll` joins again."""
        self._driver.submit(LeaveWanted(reason))
        deadline = self._clock() + timeout_ms
        with self._driver.lock:
            while RequestKind.LEAVE in self._machine.in_flight:
                remaining = deadline - self._clock()
                if remaining <= 0:
                    return
                self._driver.lock.wait(remaining / 1000)

    def close(self) -> None:
        """Stop heartbeating and release the connections, without leaving. Idempotent."""
        self._driver.close()

    # --- the application's own requests --------------------------------------------------------------

    def send_request(self, request: Any, *, to_coordinator: bool) -> Any:
        """Send a Kafka request and return its answer (the coordinator, or any broker).

        :raises CoordinatorClosedError: the session is closed.
        :raises ConnectionError: no broker, or no coordinator yet, is reachable.
        """
        if self._driver.closed:
            raise CoordinatorClosedError(
                "this member is closed; create a new one",
                group_id=self._group_id,
                member_id=self.generation().member_id,
            )
        return self._driver.call(request, to_coordinator=to_coordinator)

    def commit_offsets(self, offsets: Offsets, *, generation: Generation) -> None:
        """Commit ``offsets`` fenced by ``generation``.

        :raises CommitFailedError: no generation (nothing is sent), or the coordinator refused
            some partitions (the generation is no longer current).
        :raises ConfigurationError: an offset is malformed.
        """
        request = offset_commit_request(self._group_id, generation, offsets)
        response = self.send_request(request, to_coordinator=True)
        check_offset_commit(response, self._group_id, generation)

    def await_acknowledgement(self) -> None:
        """Wait until an acknowledgement in flight has been answered (the incremental protocol),
        at most until the member's lease runs out: the coordinator moves the member's epoch when
        it hears that the member gave partitions up, so a commit made in between would carry
        the epoch it has just left. Kafka 4.3 and the embedded coordinator accept that for the
        partitions the member kept (KIP-1251); brokers before 4.3 refuse it STALE_MEMBER_EPOCH.
        (Kafka's consumer retries its own commit before a revocation with the new epoch, and
        fails an application's ``commitSync`` with CommitFailedException; waiting here, this
        member meets neither, on any broker.)"""
        with self._driver.lock:
            while isinstance(self._machine, IncrementalMachine) and self._machine.acknowledging():
                deadline, now = self._machine.lease_deadline(), self._clock()
                if deadline is None or now >= deadline:
                    break
                self._driver.lock.wait(min((deadline - now) / 1000, _POLL_EVERY_S))

    def committed_offsets(
        self, partitions: Iterable[tuple[str, int]] | None
    ) -> dict[tuple[str, int], tuple[int, str]]:
        """The group's committed offsets for ``partitions``, or (None) for every partition.

        :raises GroupError: the coordinator answered with an error.
        """
        response = self.send_request(offset_fetch_request(self._group_id, partitions), to_coordinator=True)
        return fetched_offsets(response, self._group_id, self.generation().member_id)

    # --- internals -----------------------------------------------------------------------------------

    def _awaits(self, action: Action) -> bool:
        """Whether the machine still waits for the application to answer ``action`` (lock held)."""
        return self._machine.awaits(action)

    def _answer(self, request: Action, event: Event | Reconciled) -> bool:
        """Feed ``event`` if the machine still waits for the answer to ``request``."""
        return self._driver.submit(event, only_if=lambda: self._awaits(request))

    def _since_round_started(self) -> float | None:
        started = self._round_started
        return None if started is None else float(self._clock() - started)

    def _emit(
        self,
        kind: MemberEventKind,
        generation: int,
        member_id: str,
        protocol: str | None,
        duration_ms: float | None,
        detail: str,
    ) -> None:
        if self._observe is not None:
            self._observe(
                MemberEvent(
                    kind=kind,
                    group_id=self._group_id,
                    member_id=member_id,
                    generation_id=generation,
                    protocol=protocol,
                    duration_ms=duration_ms,
                    detail=detail,
                )
            )
