"""``coordinator-api demo``: one embedded coordinator and real member processes of every built-in
plugin, put through what production does to them, narrated and checked (the README's first
command).

Built in, and registered through the ``coordinator_api`` entry points like a third-party plugin:
the demo exercises every other built-in plugin, so it sits above them, not inside the framework
(whose imports never reach a plugin). It registers one command, ``demo``, through
``coordinator_api_register_cli_commands``; ``COORDINATOR_API_DISABLE_PLUGINS=demo`` takes it away.
"""

from __future__ import annotations

import argparse

from coordinator_api import CommandRegistry, hookimpl
from coordinator_api._cli import bounded

__all__ = ["coordinator_api_register_cli_commands"]

HELP = (
    "start a coordinator and member processes of every built-in plugin, put them through failures, "
    "narrate and check"
)
DESCRIPTION = (
    "Start an embedded coordinator (127.0.0.1 only) and real member processes of each built-in "
    "plugin, in parts: a custom Coordinator (coordinator), a leader election (leader), a consumer "
    "group (consumer), a streams group (streams), a Spark job (spark, skipped without pyspark). "
    "Narrate each step as it happens, check each plugin's promises, end with the timings measured. "
    "Exit 0 if every part passed, 1 if one failed, 130 on Ctrl-C."
)


def configure(parser: argparse.ArgumentParser) -> None:
    from coordinator_demo._demo import parse_parts

    parser.description = DESCRIPTION
    parser.add_argument(
        "--members",
        type=bounded(3, 50),
        default=3,
        help="member processes of the custom Coordinator's group, 3 to 50 (default 3)",
    )
    parser.add_argument(
        "--partitions",
        type=bounded(1, 10_000),
        default=12,
        help="partitions the custom Coordinator's members share (default 12)",
    )
    parser.add_argument(
        "--only",
        type=parse_parts,
        metavar="PART[,PART...]",
        help="run only these parts: coordinator, leader, consumer, streams, spark (default all)",
    )
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark part")
    parser.add_argument(
        "--describe",
        action="store_true",
        help="also print the `coordinator-api groups` commands that inspect the demo's groups while it runs",
    )


def run(args: argparse.Namespace) -> int:
    from coordinator_demo._demo import run_demo

    return run_demo(
        members=args.members,
        partitions=args.partitions,
        only=args.only,
        spark=not args.no_spark,
        describe=args.describe,
    )


@hookimpl
def coordinator_api_register_cli_commands(registry: CommandRegistry) -> None:
    registry.register("demo", help=HELP, configure=configure, run=run)
