"""Checks the engine's tests turn on (its shortcuts must agree with the long way round), and
requests several of them send."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coordinator_api.server._messages import (
    ConsumerGroupDowngraded,
    ConsumerGroupHeartbeat,
    ConsumerGroupSnapshot,
    ConsumerMemberSnapshot,
    GroupDeleted,
    JoinGroup,
)
from coordinator_api.server._state import Effects, GroupCoordinator


def after_every_step(state: GroupCoordinator, check: Callable[[Effects], None]) -> None:
    """Make ``state`` run ``check`` on the effects of every step it takes (a request, a timer,
    a held request released)."""

    def checked(step: Callable[..., Effects]) -> Callable[..., Effects]:
        def checked_step(*args: Any) -> Effects:
            fx = step(*args)
            check(fx)
            return fx

        return checked_step

    for name in ("handle", "expire", "release"):
        setattr(state, name, checked(getattr(state, name)))


def check_quick_looks(state: GroupCoordinator) -> None:
    """Make every shortcut of ``state`` past the held heartbeats check that the full
    reconciliation (``news_for``) finds no news where the shortcut saw none (and that it then
    changed nothing): ``still_nothing_new``, which passes one held heartbeat over, and
    ``_held_to_look_at``, which after a change passes over the held heartbeats it judges the
    change cannot concern. And after every step, that no heartbeat left held has news."""
    groups = state._consumer_groups
    quick = groups.still_nothing_new
    to_look_at = state._held_to_look_at

    def no_news(req: ConsumerGroupHeartbeat, shortcut: str) -> None:
        assert groups.news_for(req, 0) == (None, []), f"{shortcut} missed news for {req.member_id}"

    def checked(req: ConsumerGroupHeartbeat) -> bool:
        if not quick(req):
            return False
        no_news(req, "the quick look")
        return True

    def checked_group(group_id: str, now_ms: int) -> list[str]:
        chosen = to_look_at(group_id, now_ms)
        for member_id, heartbeat in state._held_group_heartbeats.get(group_id, {}).items():
            if member_id not in chosen:
                no_news(heartbeat.request, "the news serials")
        return chosen

    def nothing_held_has_news(_: Effects) -> None:
        for held in state._held_group_heartbeats.values():
            for heartbeat in held.values():
                no_news(heartbeat.request, "a held heartbeat left held")

    setattr(groups, "still_nothing_new", checked)  # noqa: B010 (a method of this one object)
    setattr(state, "_held_to_look_at", checked_group)  # noqa: B010
    after_every_step(state, nothing_held_has_news)


def check_stored_changes(state: GroupCoordinator) -> None:
    """Make every step of ``state`` check that its consumer groups' writes, applied in order as
    a store applies them (each member that changed, as it is now, and those that left), add up
    to the whole of every group: a member whose change the engine failed to note would be
    stored stale, and come back so after a restart."""
    stored: dict[str, tuple[tuple[int, int, str], dict[str, ConsumerMemberSnapshot]]] = {}

    def epochs(group: ConsumerGroupSnapshot) -> tuple[int, int, str]:
        return group.group_epoch, group.assignment_epoch, group.protocol_type

    def writes_add_up(fx: Effects) -> None:
        for write in fx.writes:
            if isinstance(write, ConsumerGroupSnapshot):
                members = stored.get(write.group_id, ((0, 0, ""), {}))[1]
                members.update((m.member_id, m) for m in write.members)
                for member_id in write.left:
                    members.pop(member_id, None)
                stored[write.group_id] = (epochs(write), members)
            elif isinstance(write, ConsumerGroupDowngraded | GroupDeleted):
                stored.pop(write.group_id, None)
        groups = state._consumer_groups
        for group_id in groups._groups:
            whole = groups.snapshot(group_id)
            if group_id not in stored:
                assert not whole.members, f"{group_id} has members but was never stored"
                continue
            assert stored[group_id][0] == epochs(whole), f"{group_id}'s epochs are stored stale"
            members = stored[group_id][1]
            in_store, in_group = sorted(members), [m.member_id for m in whole.members]
            assert in_store == in_group, f"{group_id}'s members: {in_store} stored, {in_group} held"
            for member in whole.members:
                old = members[member.member_id]
                stale = {k: (getattr(old, k), v) for k, v in vars(member).items() if getattr(old, k) != v}
                assert not stale, f"{member.member_id} is stored stale: {stale}"

    def restored(*args: Any, **kwargs: Any) -> None:
        restore(*args, **kwargs)
        for group_id in state._consumer_groups._groups:
            whole = state._consumer_groups.snapshot(group_id)
            stored[group_id] = (epochs(whole), {m.member_id: m for m in whole.members})  # as read

    restore = state.restore
    setattr(state, "restore", restored)  # noqa: B010 (a method of this one object)
    after_every_step(state, writes_add_up)


def first_classic_join(
    group_id: str, protocol_type: str, protocols: tuple[tuple[str, bytes], ...]
) -> JoinGroup:
    """A classic member's first JoinGroup (no member id yet; KIP-394's round trip not asked
    for), as a client named ``classic`` sends it."""
    return JoinGroup(
        group_id=group_id,
        member_id="",
        group_instance_id=None,
        client_id="classic",
        client_host="/127.0.0.1",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        protocol_type=protocol_type,
        protocols=protocols,
        require_known_member_id=False,
    )
