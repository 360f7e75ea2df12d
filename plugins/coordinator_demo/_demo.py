"""``coordinator-api demo``: one embedded coordinator, and real member processes of every
built-in plugin put through what production does to them, narrated as it happens.

1. ``coordinator``: a custom :class:`~coordinator_api.Coordinator` (members owning a share of
   12 partitions): a member SIGKILLed (its session expires), one paused with SIGSTOP past its
   session and resumed (it learns it lost its partitions before acting again, then rejoins),
   one stopped gracefully; after each change every partition is owned by exactly one live
   member, and no partition is worked on by two members at once.
2. ``leader``: a ``coordinator_leader.LeaderElection`` among 3 candidate processes; the leader
   SIGKILLed (crash failover once its session expires), then the next one stopped gracefully
   (immediate failover); exactly one leader at a time, epochs growing.
3. ``consumer``: a ``coordinator_consumer.ConsumerGroupMember`` group of Kafka 4's incremental
   protocol (KIP-848) whose members come and go; members keep the partitions that do not move.
4. ``streams``: a ``coordinator_streams.StreamsGroupMember`` group of simulated applications
   scaling out from 2 to 4 instances: the newcomers warm up before they take tasks over.
5. ``spark``: ``coordinator_spark.distribute`` on ``local[2]`` spreading weighted work with one
   executor task killed (skipped, saying why, without pyspark or Java, or with ``--no-spark``).

Then a table of the timings measured. Ctrl-C or SIGTERM stops every process the demo started.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from coordinator_api._signals import exit_on_sigterm
from coordinator_api.server import CoordinatorConfig, EmbeddedCoordinator, MembershipRecorder
from coordinator_demo._fleet import Context, DemoError, Fleet, Narrator, Timing
from coordinator_demo._parts import (
    CONSUMER_GROUP,
    CONSUMER_PARTITIONS,
    CONSUMER_TOPIC,
    GROUP,
    LEADER_GROUP,
    STREAMS_GROUP,
    run_consumer,
    run_coordinator,
    run_leader,
    run_streams,
)

PARTS = ("coordinator", "leader", "consumer", "streams", "spark")

_GROUPS = {"coordinator": GROUP, "leader": LEADER_GROUP, "consumer": CONSUMER_GROUP, "streams": STREAMS_GROUP}

CONFIG = CoordinatorConfig(
    # A new group's first rebalance waits this long for more members (Kafka's default is 3 s).
    initial_rebalance_delay_ms=500,
    min_session_timeout_ms=1000,
    # The incremental protocol's groups (the consumer part): the coordinator sets these.
    consumer_group_session_timeout_ms=3000,
    consumer_group_heartbeat_interval_ms=500,
)


def parse_parts(text: str) -> tuple[str, ...]:
    """``--only leader,consumer`` -> the parts, in the demo's order."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in PARTS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give one or more of {', '.join(PARTS)}, separated by commas"
        )
    return tuple(part for part in PARTS if part in names)


def run_demo(
    *,
    members: int = 3,
    partitions: int = 12,
    only: Sequence[str] | None = None,
    spark: bool = True,
    describe: bool = False,
) -> int:
    """Run the demo; return 0 when every part behaved as its plugin promises, 1 otherwise.

    :param members: member processes of the custom Coordinator's group (at least 3).
    :param partitions: partitions they share (at least ``members``).
    :param only: the parts to run (default: all of :data:`PARTS`).
    :param spark: False skips the Spark part.
    :param describe: print the ``coordinator-api groups`` commands that inspect the demo's
        groups while it runs.
    """
    if members < 3 or partitions < members:
        print("the demo needs at least 3 members and as many partitions as members", file=sys.stderr)
        return 2
    parts = tuple(only) if only else PARTS
    narrator = Narrator()
    started = time.monotonic()
    main_thread = threading.current_thread() is threading.main_thread()
    saved_signals = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)} if main_thread else {}
    if main_thread:
        exit_on_sigterm()  # SIGTERM runs the cleanup below, as Ctrl-C does
    membership_log = logging.getLogger("coordinator_api.server.membership")
    saved_level, saved_propagate = membership_log.level, membership_log.propagate
    fleet: Fleet | None = None
    ctx: Context | None = None
    coordinator = EmbeddedCoordinator(config=CONFIG, topics={CONSUMER_TOPIC: CONSUMER_PARTITIONS})
    results: list[tuple[str, bool | None]] = []
    with tempfile.TemporaryDirectory(prefix="coordinator-api-demo-") as tmp:
        workdir = Path(tmp)
        recorder = MembershipRecorder(lambda event: fleet.coordinator_event(event) if fleet else None)
        try:
            # The demo narrates the membership events itself, whatever --log-level says.
            membership_log.addHandler(recorder)
            membership_log.setLevel(logging.INFO)
            membership_log.propagate = False
            coordinator.start()
            bootstrap = coordinator.bootstrap_servers
            fleet = Fleet(bootstrap, narrator, workdir)
            ctx = Context(bootstrap, fleet, narrator, workdir, recorder)
            narrator.line(
                f"coordinator-api demo: an embedded coordinator on {bootstrap} (this machine only) and "
                f"real member processes of each built-in plugin; parts: {', '.join(parts)}"
            )
            if describe:
                _describe(narrator, bootstrap, parts)
            for index, name in enumerate(parts, 1):
                narrator.part(index, len(parts), name, _title(name, members, partitions))
                if describe and name in _GROUPS:
                    narrator.detail(
                        f"inspect: coordinator-api groups {_GROUPS[name]} --bootstrap-server {bootstrap}"
                    )
                results.append((name, _run_part(ctx, name, members, partitions, spark)))
                fleet.on_report = fleet.on_coordinator_event = None
        except (KeyboardInterrupt, SystemExit):
            print("\ncoordinator-api demo: interrupted; stopping its processes", file=sys.stderr, flush=True)
            raise
        finally:
            with _signals_held(main_thread):
                for cleanup in reversed(ctx.cleanups if ctx else []):
                    with contextlib.suppress(Exception):
                        cleanup()
                if fleet is not None:
                    fleet.stop_quietly()
                coordinator.close()
                membership_log.removeHandler(recorder)
                membership_log.setLevel(saved_level)
                membership_log.propagate = saved_propagate
            for sig, handler in saved_signals.items():
                signal.signal(sig, handler)
    assert ctx is not None
    return _summary(narrator, ctx.timings, results, time.monotonic() - started)


def _run_part(ctx: Context, name: str, members: int, partitions: int, spark: bool) -> bool | None:
    """Run one part; a :class:`DemoError` fails the part, not the demo."""
    from coordinator_demo._spark import run_spark

    runners: dict[str, Callable[[], bool | None]] = {
        "coordinator": lambda: run_coordinator(ctx, members, partitions),
        "leader": lambda: run_leader(ctx),
        "consumer": lambda: run_consumer(ctx),
        "streams": lambda: run_streams(ctx),
        "spark": lambda: run_spark(ctx, spark),
    }
    try:
        ok = runners[name]()
        ctx.fleet.stop()  # whatever the part left running
    except DemoError as exc:
        ctx.narrator.verdict(False, str(exc))
        ok = False
        ctx.fleet.stop_quietly()
    return ok


def _title(name: str, members: int, partitions: int) -> str:
    return {
        "coordinator": f"a custom Coordinator, {members} member processes sharing {partitions} partitions "
        f"(group {GROUP!r})",
        "leader": f"leader election among 3 candidate processes (coordinator_leader, group {LEADER_GROUP!r})",
        "consumer": "a consumer group on Kafka 4's incremental protocol, KIP-848, members coming and going "
        f"(coordinator_consumer, group {CONSUMER_GROUP!r}, topic {CONSUMER_TOPIC!r} of "
        f"{CONSUMER_PARTITIONS} partitions)",
        "streams": f"a streams group scaling out from 2 to 4 instances with warmups (coordinator_streams, "
        f"group {STREAMS_GROUP!r})",
        "spark": "a Spark job spreading weighted work over local[2], one executor task killed "
        "(coordinator_spark.distribute)",
    }[name]


def _describe(narrator: Narrator, bootstrap: str, parts: Sequence[str]) -> None:
    narrator.line("inspect the demo's groups with the CLI while it runs (in another terminal):")
    narrator.detail(f"coordinator-api groups --bootstrap-server {bootstrap}")
    for part in parts:
        if part in _GROUPS:
            narrator.detail(f"coordinator-api groups {_GROUPS[part]} --bootstrap-server {bootstrap}")
    if "spark" in parts:
        narrator.detail("(the Spark job's group, spark-<id>, is in the list while the job runs)")


def _summary(
    narrator: Narrator, timings: list[Timing], results: list[tuple[str, bool | None]], took: float
) -> int:
    narrator.line()
    narrator.outcome("timings measured")
    narrator.table(("part", "measured", "value"), [(t.part, t.measure, t.value) for t in timings])
    narrator.outcome("verdicts")
    for name, ok in results:
        narrator.detail(f"{name:<12} {'skipped' if ok is None else 'ok' if ok else 'FAILED'}")
    failed = [name for name, ok in results if ok is False]
    narrator.line()
    if failed:
        narrator.line(f"FAILED: {', '.join(failed)} (see above); {took:.0f} s in all")
        return 1
    narrator.line(f"OK: every part behaved as its plugin promises ({took:.0f} s in all)")
    return 0


@contextlib.contextmanager
def _signals_held(main_thread: bool) -> Iterator[None]:
    """Ignore Ctrl-C and SIGTERM while the demo cleans up, so that none of its processes is left
    behind by an impatient second Ctrl-C."""
    if not main_thread:
        yield
        return
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in saved:
        signal.signal(s, signal.SIG_IGN)
    try:
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
