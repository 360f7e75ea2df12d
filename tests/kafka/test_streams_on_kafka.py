"""``coordinator_streams.StreamsGroupMember`` on a real 3-broker Apache Kafka cluster: three
member processes share twelve stateful tasks, a fourth joins, warms up, and takes its share.

The same member processes (tests/streams/streams_member.py: a simulated application restoring
changelogs in real time) and checks as tests/streams/test_streams_processes.py on the embedded
coordinator. The streams protocol's cooperative handover and its warmups rest on a member
rejoining while the others keep running: on Kafka, a follower that rejoins starts a rebalance
only when its metadata changed (the revoked tasks, caught-up lags), so this shows the protocol
converges under Kafka's own rebalance rules, not just the embedded coordinator's.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from member_processes import MemberProcess, running_members, wait_for
from streams.test_streams_processes import overlaps

from coordinator_api.testing import KafkaCluster

STREAMS_MEMBER = Path(__file__).parent.parent / "streams" / "streams_member.py"
GROUP = "kafka-streams-scale-out"
TASKS = 12  # streams_member.py's default: 2 subtopologies x 6 partitions
ACCEPTABLE_LAG = 50
OPTIONS = {
    "group": GROUP,
    "records": 1_500,
    "restore_rate": 1_000,
    "acceptable_lag": ACCEPTABLE_LAG,
    "max_warmups": 2,
    "probe_ms": 1_500,
    # Twice streams_member.py's default: on a loaded machine a starved member would otherwise
    # lose its lease (and its tasks) now and then, which is safe but not what this test is about.
    "session_ms": 6_000,
}
LIVENESS_S = 90  # a loaded 2-core machine that also runs three broker JVMs


def start(kafka: KafkaCluster, name: str) -> MemberProcess:
    return MemberProcess("", kafka.bootstrap_servers, name, script=STREAMS_MEMBER, **OPTIONS)


def running(member: MemberProcess) -> frozenset[str]:
    events = member.events("running")
    return frozenset(events[-1]["tasks"]) if events else frozenset()


def owned(member: MemberProcess) -> frozenset[str]:
    """The active tasks the member holds by its latest report."""
    for report in reversed(member.reports):
        if "owned" in report:
            return frozenset(report["owned"])
    return frozenset()


def converged(members: list[MemberProcess], share: int) -> bool:
    """Every member runs ``share`` tasks, and together they run (and own) every task once."""
    runs = [running(m) for m in members]
    owns = [owned(m) for m in members]
    return (
        all(len(r) == share for r in runs)
        and len(frozenset().union(*runs)) == TASKS
        and sum(len(o) for o in owns) == TASKS
        and len(frozenset().union(*owns)) == TASKS
    )


def timeline(members: list[MemberProcess], since: float) -> str:
    """Every report after ``since``, in order, for a failing test to show."""
    rows = [
        (
            r["t"],
            f"{r['t'] - since:8.3f} s  {m.name}  "
            + json.dumps({k: v for k, v in r.items() if k not in ("t", "name")}),
        )
        for m in members
        for r in m.reports
        if r["t"] >= since
    ]
    return "\n".join(text for _, text in sorted(rows))


def diagnostics(members: list[MemberProcess], since: float) -> str:
    stderr = "\n".join(f"--- {m.name}\n{m.stderr_text()[-2000:]}" for m in members)
    return f"{timeline(members, since)}\n{stderr}"


def converge(members: list[MemberProcess], share: int, since: float) -> None:
    try:
        wait_for(
            lambda: converged(members, share),
            LIVENESS_S,
            f"{len(members)} members running {share} tasks each",
            step=0.1,
        )
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{diagnostics(members, since)}") from None


def test_a_fourth_member_warms_up_before_it_takes_over_on_kafka(kafka: KafkaCluster) -> None:
    members = [start(kafka, name) for name in ("ka", "kb", "kc")]
    t_start = time.time()
    with running_members(members):
        converge(members, 4, t_start)
        t_three = time.time()
        late = start(kafka, "kd")
        members.append(late)
        converge(members, 3, t_three)
        t_four = time.time()
        # Every active task handed over after the join arrived caught up: it had warmed up.
        for member in members:
            for report in member.events("assigned"):
                if report["t"] > t_three:
                    assert all(
                        lag is not None and lag <= ACCEPTABLE_LAG for lag in report["added_lags"].values()
                    ), (member.name, report)
        assert late.events("assigned")[0]["owned"] == [], diagnostics(members, t_three)
        warmups = [r for r in late.events("assigned") if r["warmup"]]
        assert warmups, diagnostics(members, t_three)
        assert overlaps(members) == [], diagnostics(members, t_three)
        # What the new member runs, the old ones gave up first: revoked in a cooperative
        # handover or, if the loaded machine starved a member's heartbeats past its lease, lost
        # (overlaps above checks the order).
        released = {
            kind: set().union(*(r["tasks"] for m in members[:3] for r in m.events(kind) if r["t"] > t_three))
            for kind in ("revoked", "lost")
        }
        assert running(late) <= released["revoked"] | released["lost"], diagnostics(members, t_three)
        if not released["lost"]:
            assert released["revoked"] == running(late), diagnostics(members, t_three)
        generations = sorted({r["generation"] for m in members for r in m.events("assigned")})
        print(
            f"\nstreams on Kafka: the 4th member converged {t_four - t_three:.1f} s after starting, "
            f"through {len(warmups)} assignment(s) with warmups; generations {generations}; "
            f"{len(released['revoked'])} tasks revoked, {len(released['lost'])} lost on the way"
        )
