"""Checks the engine's tests turn on: its shortcuts must agree with the long way round."""

from __future__ import annotations

from coordinator_api.server._messages import ConsumerGroupHeartbeat
from coordinator_api.server._state import GroupCoordinator


def check_quick_looks(state: GroupCoordinator) -> None:
    """Make every ``still_nothing_new`` of ``state``'s consumer groups that says a held heartbeat
    has no news check that the full reconciliation (``news_for``) finds none either (and that
    it then changed nothing)."""
    groups = state._consumer_groups
    quick = groups.still_nothing_new

    def checked(req: ConsumerGroupHeartbeat) -> bool:
        if not quick(req):
            return False
        assert groups.news_for(req, 0) == (None, []), f"the quick look missed news for {req.member_id}"
        return True

    setattr(groups, "still_nothing_new", checked)  # noqa: B010 (a method of this one object)
