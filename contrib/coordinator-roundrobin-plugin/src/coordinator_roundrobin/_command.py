"""``coordinator-api roundrobin-plan``: how the assignor would spread shards, without a group."""

from __future__ import annotations

import argparse
import sys

from coordinator_roundrobin._assignor import ShardMember, assign_round_robin


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--shard", action="append", required=True, help="a shard name (repeatable)")
    parser.add_argument(
        "--member",
        action="append",
        required=True,
        metavar="ID[=CAPACITY]",
        help="a member id, optionally with its capacity (repeatable)",
    )


def run(args: argparse.Namespace) -> int:
    members = []
    for spec in args.member:
        member_id, _, capacity = spec.partition("=")
        if capacity and not capacity.isdigit():
            print(f"roundrobin-plan: --member expects ID or ID=CAPACITY, got {spec!r}", file=sys.stderr)
            return 2
        members.append(ShardMember(member_id=member_id, capacity=int(capacity) if capacity else None))
    plan = assign_round_robin(members, args.shard)
    for member_id, shards in plan.items():
        print(f"{member_id}: {', '.join(shards) or '(none)'}")
    unassigned = sorted(set(args.shard).difference(*plan.values()))
    if unassigned:
        print(f"unassigned: {', '.join(unassigned)}")
    return 0
