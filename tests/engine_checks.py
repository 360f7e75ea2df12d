"""Checks the engine's tests turn on: its shortcuts must agree with the long way round."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coordinator_api.server._messages import ConsumerGroupHeartbeat
from coordinator_api.server._state import Effects, GroupCoordinator


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

    def checked_group(group_id: str) -> list[str]:
        chosen = to_look_at(group_id)
        for member_id, heartbeat in state._held_group_heartbeats.get(group_id, {}).items():
            if member_id not in chosen:
                no_news(heartbeat.request, "the news serials")
        return chosen

    def nothing_held_has_news(step: Callable[..., Effects]) -> Callable[..., Effects]:
        def checked_step(*args: Any) -> Effects:
            fx = step(*args)
            for held in state._held_group_heartbeats.values():
                for heartbeat in held.values():
                    no_news(heartbeat.request, "a held heartbeat left held")
            return fx

        return checked_step

    setattr(groups, "still_nothing_new", checked)  # noqa: B010 (a method of this one object)
    setattr(state, "_held_to_look_at", checked_group)  # noqa: B010
    for name in ("handle", "expire", "release"):
        setattr(state, name, nothing_held_has_news(getattr(state, name)))
