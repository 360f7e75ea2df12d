"""The ``coordinator-api`` command."""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from coordinator_api._errors import ConfigurationError, CoordinatorApiError
from coordinator_api._plugins import add_plugin_commands, plugins_report
from coordinator_api._protocol import ErrorCode
from coordinator_api.server import CoordinatorConfig, CoordinatorServer

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


class _JsonFormatter(logging.Formatter):
    """One JSON object per line; membership events carry their fields."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": self.formatTime(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        event = getattr(record, "membership_event", None)
        if event is not None:
            doc["event"] = event
        return json.dumps(doc)


def _configure_logging(level: str, fmt: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # The Kafka client library's own chatter only when asked for everything.
    logging.getLogger("kafka").setLevel(logging.DEBUG if level == "DEBUG" else logging.CRITICAL)


_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _log_level(text: str) -> str:
    level = text.upper()
    if level not in _LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(_LOG_LEVELS)}")
    return level


def _bounded(low: int, high: int | None = None) -> Any:
    """An argparse type: an integer from ``low`` to ``high``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low or (high is not None and value > high):
            span = f"from {low} to {high}" if high is not None else f"at least {low}"
            raise argparse.ArgumentTypeError(f"{value} is out of range: give a number {span}")
        return value

    return parse


def _server_flags() -> argparse.ArgumentParser:
    """The flags of the commands that talk to a coordinator or a Kafka cluster."""
    flags = argparse.ArgumentParser(add_help=False)
    flags.add_argument(
        "--bootstrap-server",
        "--bootstrap-servers",
        default="127.0.0.1:9092",
        help="HOST:PORT of the embedded coordinator or of any Kafka broker (default 127.0.0.1:9092)",
    )
    flags.add_argument(
        "--timeout-ms",
        type=_bounded(1),
        default=2000,
        help="give up on a server that does not answer within this long (default 2000)",
    )
    flags.add_argument("--json", action="store_true", help="print JSON (schemas in docs/coordinator.md)")
    return flags


def _global_flags(*, defaults: bool) -> argparse.ArgumentParser:
    """The flags every command takes, before or after its name (defaults only at the top)."""
    flags = argparse.ArgumentParser(add_help=False)
    flags.add_argument(
        "--log-level",
        type=_log_level,
        default=None if defaults else argparse.SUPPRESS,
        help="DEBUG, INFO, WARNING or ERROR (default: INFO for serve, WARNING otherwise; the Kafka "
        "client library logs only at DEBUG)",
    )
    flags.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text" if defaults else argparse.SUPPRESS,
        help="text lines or one JSON object per line (default text)",
    )
    return flags


def parse_topic(text: str) -> tuple[str, int]:
    """``NAME:PARTITIONS`` -> (name, partitions)."""
    name, sep, count = text.rpartition(":")
    if not sep or not name or not count.isdigit() or int(count) < 1:
        raise ConfigurationError(f"--topic expects NAME:PARTITIONS (e.g. events:12), got {text!r}")
    return name, int(count)


def load_config_file(path: Path) -> tuple[dict[str, Any], dict[str, int]]:
    """Read a TOML file with a ``[coordinator]`` table of settings and a ``[topics]`` table."""
    try:
        doc = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigurationError(f"cannot read config file {path}: {exc}") from exc
    unknown = sorted(set(doc) - {"coordinator", "topics"})
    if unknown:
        raise ConfigurationError(
            f"{path}: unknown table(s) {', '.join(unknown)}; expected [coordinator] and [topics]"
        )
    topics = doc.get("topics", {})
    for name, partitions in topics.items():
        if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1:
            raise ConfigurationError(f"{path}: topic {name!r} needs a positive partition count")
    return dict(doc.get("coordinator", {})), dict(topics)


# Each setting's flag help; the default is added from CoordinatorConfig.
_SETTING_FLAGS = {
    "initial_rebalance_delay_ms": "how long a new group's first rebalance waits for more members "
    "(group.initial.rebalance.delay.ms)",
    "min_session_timeout_ms": "the shortest session a member may ask for (group.min.session.timeout.ms)",
    "max_session_timeout_ms": "the longest session a member may ask for (group.max.session.timeout.ms)",
    "max_group_size": "the most members a group may have (group.max.size)",
    "connections_max_idle_ms": "close connections silent this long (connections.max.idle.ms)",
    "max_request_bytes": "close a connection whose request is larger (socket.request.max.bytes)",
    "heartbeat_hold_ms": "hold a heartbeat with nothing new up to this long, to answer it the moment "
    "there is news; 0 answers at once as Kafka does",
}


def _serve(args: argparse.Namespace) -> int:
    settings: dict[str, Any] = {}
    topics: dict[str, int] = {}
    if args.config is not None:
        settings, topics = load_config_file(Path(args.config))
    for name in _SETTING_FLAGS:
        value = getattr(args, name)
        if value is not None:
            settings[name] = value
    for spec in args.topic:
        name, partitions = parse_topic(spec)
        topics[name] = partitions
    server = CoordinatorServer(
        host=args.host,
        port=args.port,
        config=CoordinatorConfig.from_mapping(settings),
        data_dir=args.data_dir,
        topics=topics,
        fresh_start=args.fresh_start,
    )

    async def run() -> None:
        await server.start()
        where = server.bootstrap_servers
        if server.host != where.rsplit(":", 1)[0]:
            where = f"{server.host}:{server.port} (clients connect to {where})"
        print(f"coordinator listening on {where}", flush=True)
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await server.close()

    asyncio.run(run())
    return 0


def _data_check(args: argparse.Namespace) -> int:
    from coordinator_api.server._store import SqliteStore

    store = SqliteStore(Path(args.data_dir))
    try:
        topics, groups, offsets = store.load()
        consumer_groups = store.load_consumer_groups()
    finally:
        store.close()
    print(
        f"{store.path}: {len(topics)} topic(s), {len(groups)} classic group(s), "
        f"{len(consumer_groups)} consumer group(s), {len(offsets)} committed offset(s)"
    )
    for problem in store.problems:
        print(f"  skipped: {problem}")
    return 1 if store.problems else 0


def _demo(args: argparse.Namespace) -> int:
    from coordinator_api._demo import run_demo

    return run_demo(members=args.members, partitions=args.partitions)


def _groups(args: argparse.Namespace) -> int:
    from kafka.errors import KafkaError

    from coordinator_api._inspect import describe_group, group_document, list_groups, render_group
    from coordinator_api._plugins import PluginRegistry

    try:
        if args.group is None:
            listed = list_groups(args.bootstrap_server, timeout_ms=args.timeout_ms)
            if args.json:
                fields = ("group_id", "protocol_type", "state")
                print(json.dumps([{f: getattr(g, f) for f in fields} for g in listed], indent=2))
            else:
                for group in listed:
                    print(f"{group.group_id}\t{group.protocol_type or '-'}\t{group.state}")
            return 0
        description = describe_group(args.bootstrap_server, args.group, timeout_ms=args.timeout_ms)
    except KafkaError as exc:
        raise _unreachable(args, exc) from exc
    if description.state == "Dead" and not description.members and description.group_epoch is None:
        raise CoordinatorApiError(f"group {args.group!r} does not exist on {args.bootstrap_server}")
    decoders = PluginRegistry.load().payload_decoders
    if args.json:
        print(json.dumps(group_document(description, decoders), indent=2))
    else:
        print(render_group(description, decoders))
    return 0


def _topics(args: argparse.Namespace) -> int:
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError, for_code

    try:
        admin = KafkaAdminClient(
            bootstrap_servers=args.bootstrap_server,
            client_id="coordinator-api-topics",
            request_timeout_ms=args.timeout_ms,
            bootstrap_timeout_ms=args.timeout_ms,
        )
    except KafkaError as exc:
        raise _unreachable(args, exc) from exc
    try:
        if args.topics_command == "create":
            wanted = {"num_partitions": args.partitions, "replication_factor": args.replication_factor}
            try:
                (created,) = admin.create_topics({args.topic: wanted}, raise_errors=False)["topics"]
            except KafkaError as exc:
                raise _unreachable(args, exc) from exc
            if created["error_code"]:
                reason = for_code(created["error_code"]).__name__
                if created["error_message"]:
                    reason += f": {created['error_message']}"
                raise CoordinatorApiError(f"cannot create topic {args.topic!r}: {reason}")
            if args.json:
                print(json.dumps({"topic": args.topic, "partitions": args.partitions}))
            else:
                print(f"created topic {args.topic} with {args.partitions} partition(s)")
            return 0
        names = sorted(admin.list_topics()) if args.topics_command == "list" else [args.topic]
        described = []
        for topic in admin.describe_topics(names):
            if topic["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                raise CoordinatorApiError(
                    f"topic {topic['name']!r} does not exist on {args.bootstrap_server}"
                )
            if topic["error_code"]:
                reason = for_code(topic["error_code"]).__name__
                raise CoordinatorApiError(f"cannot describe topic {topic['name']!r}: {reason}")
            described.append(
                {
                    "topic": topic["name"],
                    "topic_id": topic["topic_id"],
                    "partitions": len(topic["partitions"]),
                }
            )
    finally:
        admin.close()
    if args.json:
        print(json.dumps(described if args.topics_command == "list" else described[0], indent=2))
    else:
        for t in described:
            print(f"{t['topic']}\t{t['partitions']} partition(s)\t{t['topic_id']}")
    return 0


def _unreachable(args: argparse.Namespace, exc: Exception) -> CoordinatorApiError:
    return CoordinatorApiError(
        f"no answer from {args.bootstrap_server} within {args.timeout_ms} ms ({type(exc).__name__}); "
        "is a coordinator or Kafka broker listening there? (--bootstrap-server, --timeout-ms)"
    )


def _plugins(args: argparse.Namespace) -> int:
    report, failed = plugins_report()
    print(report, end="")
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="coordinator-api",
        description="Group coordination on Kafka's group protocol.",
        parents=[_global_flags(defaults=True)],
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"coordinator-api {importlib.metadata.version('coordinator-api')}",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    anywhere = [_global_flags(defaults=False)]

    serve = commands.add_parser(
        "serve",
        help="run the embedded coordinator (a Kafka-protocol server for groups)",
        description="Run the embedded coordinator until interrupted. Prints "
        "'coordinator listening on HOST:PORT' when ready.",
        parents=anywhere,
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument(
        "--port", type=_bounded(0, 65535), default=9092, help="port; 0 picks a free one (default 9092)"
    )
    serve.add_argument("--data-dir", help="directory for durable state; without it state is in memory")
    serve.add_argument(
        "--fresh-start",
        action="store_true",
        help="start empty even though --data-dir held state whose database is missing, empty or damaged "
        "(the old database is kept aside, renamed, never deleted)",
    )
    serve.add_argument("--config", help="TOML file with [coordinator] settings and [topics]")
    serve.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="NAME:PARTITIONS",
        help="declare a topic (repeatable)",
    )
    defaults = CoordinatorConfig()
    for name, help_text in _SETTING_FLAGS.items():
        default = getattr(defaults, name)
        shown = "unlimited" if default is None else default
        serve.add_argument(
            "--" + name.replace("_", "-"),
            type=_bounded(0),
            default=None,
            help=f"{help_text}; default {shown}",
        )
    serve.set_defaults(func=_serve, default_log_level="INFO")

    demo = commands.add_parser(
        "demo",
        help="start a coordinator, run a group of member processes against it, report",
        parents=anywhere,
    )
    demo.add_argument(
        "--members", type=_bounded(3, 50), default=3, help="member processes, 3 to 50 (default 3)"
    )
    demo.add_argument(
        "--partitions", type=_bounded(1, 10_000), default=12, help="partitions of the demo topic (default 12)"
    )
    demo.set_defaults(func=_demo)

    groups = commands.add_parser(
        "groups",
        help="list the groups of a coordinator, or describe one with its payloads in words",
        description="Without GROUP, list every group (id, protocol type, state). With GROUP, show "
        "its members and their metadata and assignments, put in words by the installed plugins' "
        "payload decoders.",
        parents=[*anywhere, _server_flags()],
    )
    groups.add_argument("group", nargs="?", help="the group to describe")
    groups.set_defaults(func=_groups)

    plugins = commands.add_parser(
        "plugins",
        help="list the installed plugins, the distribution each comes from and what it registers",
        description="List the plugins of the coordinator_api entry-point group, the distribution and "
        "version each comes from, what each registers, and the ones COORDINATOR_API_DISABLE_PLUGINS "
        "disables.",
        parents=anywhere,
    )
    plugins.set_defaults(func=_plugins)

    topics = commands.add_parser(
        "topics",
        help="list, describe or create topics (kafka-topics)",
        description="Topics of the embedded coordinator or of any Kafka cluster, as kafka-topics shows them.",
        parents=anywhere,
    )
    topic_commands = topics.add_subparsers(dest="topics_command", required=True)
    server = _server_flags()
    listing = topic_commands.add_parser("list", help="every topic", parents=[*anywhere, server])
    listing.set_defaults(func=_topics)
    describe = topic_commands.add_parser("describe", help="one topic", parents=[*anywhere, server])
    describe.add_argument("topic", help="the topic")
    describe.set_defaults(func=_topics)
    create = topic_commands.add_parser("create", help="declare a topic", parents=[*anywhere, server])
    create.add_argument("topic", help="the topic")
    create.add_argument("--partitions", type=_bounded(1), default=1, help="partitions (default 1)")
    create.add_argument(
        "--replication-factor", type=_bounded(1), default=1, help="replicas of each partition (default 1)"
    )
    create.set_defaults(func=_topics)

    data = commands.add_parser(
        "data",
        help="look after a coordinator's data directory",
        description="Commands on a data directory of `coordinator-api serve --data-dir`.",
        parents=anywhere,
    )
    data_commands = data.add_subparsers(dest="data_command", required=True)
    check = data_commands.add_parser(
        "check",
        help="check that every stored topic, group and offset can be read (stop the coordinator first)",
        description="Open the data directory as the coordinator would and read everything in it: exit 0 "
        "if all is readable, 1 listing the rows a coordinator would skip, 2 with one line if the "
        "database is missing, empty, damaged or in use.",
        parents=anywhere,
    )
    check.add_argument("data_dir", help="the data directory")
    check.set_defaults(func=_data_check)
    add_plugin_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_logging(args.log_level or getattr(args, "default_log_level", "WARNING"), args.log_format)
    try:
        result: int = args.func(args)
    except CoordinatorApiError as exc:
        print(f"coordinator-api: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return result
