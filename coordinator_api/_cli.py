"""The ``coordinator-api`` command."""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.metadata
import io
import json
import logging
import shutil
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from coordinator_api._errors import ConfigurationError, CoordinatorApiError
from coordinator_api._plugins import add_plugin_commands, plugins_report
from coordinator_api._protocol import ErrorCode
from coordinator_api.server import CoordinatorConfig, CoordinatorServer, Listener, SaslSettings, TlsSettings
from coordinator_api.server._listeners import parse_listeners
from coordinator_api.server._tls import ClientAuth

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


log = logging.getLogger(__name__)


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


def bounded(low: int, high: int | None = None) -> Any:
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
        type=bounded(1),
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


def parse_super_users(text: str) -> tuple[str, ...]:
    """``super.users`` as Kafka writes it: principals separated by semicolons
    (``User:admin;User:ops``)."""
    from coordinator_api.server._acls import check_principal

    return tuple(check_principal(p.strip(), what="super user") for p in text.split(";") if p.strip())


# The [server] table of a config file: serve's flags of where and how it listens, each under its
# flag's name (underscores for dashes) -> the TOML types it takes. A flag given overrides it.
_SERVER_KEYS: dict[str, tuple[type, ...]] = {
    "host": (str,),
    "port": (int,),
    "listeners": (str, list),
    "listener_security_protocol_map": (str, list),
    "advertised_listeners": (str, list),
    "allow_anonymous": (bool,),
    "ssl_certfile": (str,),
    "ssl_keyfile": (str,),
    "ssl_cafile": (str,),
    "ssl_client_auth": (str,),
    "sasl_users_file": (str,),
    "sasl_mechanisms": (str, list),
}


def load_config_file(path: Path) -> tuple[dict[str, Any], dict[str, int], dict[str, Any]]:
    """Read a TOML file with a ``[coordinator]`` table of settings, a ``[topics]`` table and a
    ``[server]`` table of listeners and their security (:data:`_SERVER_KEYS`); a list where the
    flag takes a comma-separated one is joined with commas."""
    try:
        doc = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigurationError(f"cannot read config file {path}: {exc}") from exc
    unknown = sorted(set(doc) - {"coordinator", "topics", "server"})
    if unknown:
        raise ConfigurationError(
            f"{path}: unknown table(s) {', '.join(unknown)}; expected [coordinator], [topics] and [server]"
        )
    topics = doc.get("topics", {})
    for name, partitions in topics.items():
        if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1:
            raise ConfigurationError(f"{path}: topic {name!r} needs a positive partition count")
    server: dict[str, Any] = {}
    for key, given in doc.get("server", {}).items():
        types = _SERVER_KEYS.get(key)
        if types is None:
            raise ConfigurationError(
                f"{path}: unknown [server] setting {key}; known: {', '.join(sorted(_SERVER_KEYS))}"
            )
        if isinstance(given, bool) is not (bool in types) or not isinstance(given, types):
            expected = " or ".join("a list of strings" if t is list else t.__name__ for t in types)
            raise ConfigurationError(f"{path}: [server] {key} must be {expected}, got {given!r}")
        if isinstance(given, list) and not all(isinstance(item, str) for item in given):
            raise ConfigurationError(f"{path}: [server] {key} must be a list of strings, got {given!r}")
        server[key] = ",".join(given) if isinstance(given, list) else given
    return dict(doc.get("coordinator", {})), dict(topics), server


# Each setting's flag help; the default is added from CoordinatorConfig.
_SETTING_FLAGS = {
    "initial_rebalance_delay_ms": "how long a new group's first rebalance waits for more members "
    "(group.initial.rebalance.delay.ms)",
    "min_session_timeout_ms": "the shortest session a member may ask for (group.min.session.timeout.ms)",
    "max_session_timeout_ms": "the longest session a member may ask for (group.max.session.timeout.ms)",
    "max_group_size": "the most members a group may have (group.max.size)",
    "connections_max_idle_ms": "close connections silent this long (connections.max.idle.ms)",
    "max_request_bytes": "close a connection whose request is larger (socket.request.max.bytes)",
    "queued_max_request_bytes": "the most request bytes all connections together may hold; over it, "
    "connections sending large requests are not read for a while (queued.max.request.bytes)",
    "max_connections_per_ip": "close new connections from an address that has this many "
    "(max.connections.per.ip)",
    "heartbeat_hold_ms": "hold a heartbeat with nothing new up to this long, to answer it the moment "
    "there is news; 0 answers at once as Kafka does",
}


#: The young-generation threshold of CPython's cyclic garbage collector in the ``serve``
#: process (CPython's default: 700). A membership change in a large group allocates many
#: short-lived objects (a leave at 1,000 members: about 18 young passes at the default),
#: and each young pass that moves objects on brings the next full pass over the whole heap
#: nearer (about 70 ms at 1,000 members, every request waiting). As Kafka's start scripts choose
#: the JVM's collector for a broker, the standalone server chooses CPython's; an application
#: that embeds the coordinator keeps its own settings.
SERVE_GC_YOUNG_THRESHOLD = 10_000


def _collect_for_serving() -> str:
    """The ``serve`` process's collector: what was loaded before serving (modules, plugins,
    settings) is kept out of every future pass (``gc.freeze``), and young passes come less
    often (:data:`SERVE_GC_YOUNG_THRESHOLD`). Returns what it did, for the log once serving."""
    gc.collect()
    gc.freeze()
    young, middle, old = gc.get_threshold()
    gc.set_threshold(SERVE_GC_YOUNG_THRESHOLD, middle, old)
    return (
        f"garbage collector: {gc.get_freeze_count()} objects loaded before serving kept out of its "
        f"passes, young-generation threshold {SERVE_GC_YOUNG_THRESHOLD} (was {young})"
    )


def _serve(args: argparse.Namespace) -> int:
    settings: dict[str, Any] = {}
    topics: dict[str, int] = {}
    if args.config is not None:
        settings, topics, server_settings = load_config_file(Path(args.config))
        for key, value in server_settings.items():
            if getattr(args, key) is None:  # a flag given overrides the file
                setattr(args, key, value)
        if args.port is not None and not 0 <= args.port <= 65535:
            raise ConfigurationError(f"{args.config}: [server] port must be 0..65535, got {args.port}")
    # TlsSettings refuses any other value in one line.
    client_auth = cast("ClientAuth", args.ssl_client_auth or "none")
    for name in _SETTING_FLAGS:
        value = getattr(args, name)
        if value is not None:
            settings[name] = value
    if args.network_thread:
        settings["network_thread"] = True
    if args.authorizer:
        settings["authorizer"] = True
    if args.super_users is not None:
        settings["super_users"] = parse_super_users(args.super_users)
    if args.allow_everyone_if_no_acl_found:
        settings["allow_everyone_if_no_acl_found"] = True
    for spec in args.topic:
        name, partitions = parse_topic(spec)
        topics[name] = partitions
    tls = None
    if args.ssl_certfile is not None:
        tls = TlsSettings(
            certfile=args.ssl_certfile,
            keyfile=args.ssl_keyfile,
            cafile=args.ssl_cafile,
            client_auth=client_auth,
        )
    elif args.ssl_keyfile or args.ssl_cafile or client_auth != "none":
        raise ConfigurationError("--ssl-keyfile, --ssl-cafile and --ssl-client-auth need --ssl-certfile")
    sasl = None
    if args.sasl_users_file is not None:
        listed = args.sasl_mechanisms or "SCRAM-SHA-256,SCRAM-SHA-512"
        mechanisms = tuple(m.strip() for m in listed.split(",") if m.strip())
        sasl = SaslSettings(users_file=args.sasl_users_file, mechanisms=mechanisms)
    if args.listeners is None:
        if args.listener_security_protocol_map or args.advertised_listeners:
            raise ConfigurationError(
                "--listener-security-protocol-map and --advertised-listeners need --listeners"
            )
        listeners = [
            Listener(
                host="127.0.0.1" if args.host is None else args.host,
                port=9092 if args.port is None else args.port,
                tls=tls,
                sasl=sasl,
                allow_anonymous=bool(args.allow_anonymous),
            )
        ]
    elif args.host is not None or args.port is not None:
        raise ConfigurationError("give either --listeners or --host and --port, not both")
    else:
        listeners = parse_listeners(
            args.listeners,
            protocol_map=args.listener_security_protocol_map,
            advertised=args.advertised_listeners,
            tls=tls,
            sasl=sasl,
            allow_anonymous=bool(args.allow_anonymous),
        )
    server = CoordinatorServer(
        config=CoordinatorConfig.from_mapping(settings),
        data_dir=args.data_dir,
        topics=topics,
        fresh_start=args.fresh_start,
        listeners=listeners,
    )

    async def run() -> None:
        collector = _collect_for_serving()
        await server.start()
        log.info("%s", collector)  # once started: a server that cannot start says one line
        # Stopped cleanly from the moment it says it listens.
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        for listener in server.listeners:
            advertised = server.bootstrap_servers_of(listener.name)
            notes = (
                [f"listener {listener.name}, {listener.security_protocol}"]
                if len(server.listeners) > 1
                else []
            )
            listened = f"{listener.host}:{server.ports[listener.name]}"
            if listened != advertised:
                notes.append(f"clients connect to {advertised}")
            where = listened + (f" ({'; '.join(notes)})" if notes else "")
            print(f"coordinator listening on {where}", flush=True)
        await stop.wait()
        await server.close()

    asyncio.run(run())
    return 0


def _users_of(path: str, *, missing_ok: bool) -> dict[str, Any]:
    from coordinator_api.server._sasl import load_users

    if missing_ok and not Path(path).exists():
        return {}
    return load_users(path)


def _users_add(args: argparse.Namespace) -> int:
    from coordinator_api.server._sasl import SCRAM_MECHANISMS, add_user, save_users

    password = sys.stdin.readline().rstrip("\n")
    users = _users_of(args.users_file, missing_ok=True)
    add_user(users, args.user, password, args.mechanism or SCRAM_MECHANISMS)
    save_users(args.users_file, users)
    print(f"user {args.user}: {', '.join(sorted(users[args.user]))}")
    return 0


def _users_list(args: argparse.Namespace) -> int:
    from coordinator_api.server._sasl import described

    listed = described(_users_of(args.users_file, missing_ok=False))
    if args.json:
        print(json.dumps(listed, indent=2))
    else:
        for entry in listed:
            print(f"{entry['user']}\t{','.join(entry['mechanisms'])}")
    return 0


def _users_remove(args: argparse.Namespace) -> int:
    from coordinator_api.server._sasl import save_users

    users = _users_of(args.users_file, missing_ok=False)
    if users.pop(args.user, None) is None:
        raise CoordinatorApiError(f"no user {args.user!r} in {args.users_file}")
    save_users(args.users_file, users)
    print(f"removed user {args.user}")
    return 0


def _data_check(args: argparse.Namespace) -> int:
    from coordinator_api.server._store import SqliteStore

    store = SqliteStore(Path(args.data_dir))
    try:
        topics, groups, offsets = store.load()
        consumer_groups = store.load_consumer_groups()
        acls = store.load_acls()
        quotas = store.load_client_quotas()
        group_configs = store.load_group_configs()
    finally:
        store.close()
    print(
        f"{store.path}: {len(topics)} topic(s), {len(groups)} classic group(s), "
        f"{len(consumer_groups)} consumer group(s), {len(offsets)} committed offset(s), "
        f"{len(acls)} ACL(s), {len(quotas)} client quota(s), {len(group_configs)} group(s) with configs"
    )
    for problem in store.problems:
        print(f"  skipped: {problem}")
    return 1 if store.problems else 0


def table(header: Sequence[str], rows: Sequence[Sequence[str]], *, aligned: bool) -> str:
    """Rows as a terminal shows them (``aligned``: a table drawn by rich, fitted to the
    terminal's width, header in bold) or as a script reads them (one line of tab-separated
    fields per row, no header); "" for no rows unaligned."""
    if not aligned:
        return "\n".join("\t".join(row) for row in rows)
    from rich import box
    from rich.console import Console
    from rich.table import Table

    drawn = Table(*header, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
    for row in rows:
        drawn.add_row(*row)
    out = io.StringIO()
    Console(file=out, force_terminal=True, width=shutil.get_terminal_size().columns).print(drawn)
    return out.getvalue().rstrip("\n")


def _print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    text = table(header, rows, aligned=sys.stdout.isatty())
    if text:
        print(text)


def _groups_list(args: argparse.Namespace) -> int:
    from kafka.errors import KafkaError

    from coordinator_api._inspect import list_groups

    try:
        listed = list_groups(args.bootstrap_server, timeout_ms=args.timeout_ms)
    except KafkaError as exc:
        raise _server_error(args, exc) from exc
    if args.json:
        fields = ("group_id", "protocol_type", "state")
        print(json.dumps([{f: getattr(g, f) for f in fields} for g in listed], indent=2))
    else:
        rows = [(g.group_id, g.protocol_type or "-", g.state) for g in listed]
        _print_table(("GROUP", "PROTOCOL-TYPE", "STATE"), rows)
    return 0


def _groups_describe(args: argparse.Namespace) -> int:
    from kafka.errors import KafkaError

    from coordinator_api._inspect import (
        MEMBER_COLUMNS,
        OFFSET_COLUMNS,
        describe_group,
        group_document,
        group_line,
        group_offsets,
        member_rows,
        offset_rows,
        render_group,
    )
    from coordinator_api._plugins import PluginRegistry

    try:
        description = describe_group(args.bootstrap_server, args.group, timeout_ms=args.timeout_ms)
        if description.state == "Dead" and not description.members and description.group_epoch is None:
            raise CoordinatorApiError(f"group {args.group!r} does not exist on {args.bootstrap_server}")
        offsets = None
        if args.offsets:
            offsets = group_offsets(args.bootstrap_server, description, timeout_ms=args.timeout_ms)
    except KafkaError as exc:
        raise _server_error(args, exc) from exc
    decoders = PluginRegistry.load().payload_decoders
    whole = not (args.state or args.members or args.offsets)
    if args.json:
        document = group_document(
            description,
            decoders,
            state=whole or args.state,
            members=whole or args.members,
            offsets=offsets,
        )
        print(json.dumps(document, indent=2))
        return 0
    if whole:
        print(render_group(description, decoders))
        return 0
    aligned = sys.stdout.isatty()
    parts = []
    if args.state:
        parts.append(group_line(description))
    if args.members:
        parts.append(table(MEMBER_COLUMNS, member_rows(description, decoders), aligned=aligned))
    if offsets is not None:
        parts.append(table(OFFSET_COLUMNS, offset_rows(offsets), aligned=aligned))
    text = "\n\n".join(part for part in parts if part)
    if text:
        print(text)
    return 0


def _groups_delete(args: argparse.Namespace) -> int:
    from kafka.errors import KafkaError

    from coordinator_api._inspect import delete_groups

    try:
        results = delete_groups(args.bootstrap_server, args.groups, timeout_ms=args.timeout_ms)
    except KafkaError as exc:
        raise _server_error(args, exc) from exc
    if args.json:
        print(json.dumps([{"group_id": g, "error": e} for g, e in results.items()], indent=2))
    else:
        for group_id, error in results.items():
            if error is None:
                print(f"deleted group {group_id}")
    refused = [f"cannot delete group {g!r}: {_DELETE_REFUSALS.get(e, e)}" for g, e in results.items() if e]
    if refused:
        raise CoordinatorApiError("; ".join(refused))
    return 0


_DELETE_REFUSALS = {
    "NON_EMPTY_GROUP": "NON_EMPTY_GROUP (it has members: stop them first)",
    "GROUP_ID_NOT_FOUND": "GROUP_ID_NOT_FOUND (no such group)",
}


def _partition_spec(text: str) -> tuple[str, tuple[int, ...] | None]:
    """An argparse type: ``TOPIC`` or ``TOPIC:P,P,...`` -> (topic, partitions or None)."""
    name, sep, numbers = text.rpartition(":") if ":" in text else (text, "", "")
    if not name:
        raise argparse.ArgumentTypeError(f"{text!r} names no topic: give TOPIC or TOPIC:P,P,...")
    if not sep:
        return name, None
    partitions = []
    for number in numbers.split(","):
        if not number.strip().isdigit():
            raise argparse.ArgumentTypeError(
                f"{text!r}: partitions are whole numbers from 0, separated by commas (TOPIC:0,1,2)"
            )
        if int(number) > _MAX_INT32:
            raise argparse.ArgumentTypeError(f"{text!r}: partition {int(number)} is out of range")
        partitions.append(int(number))
    return name, tuple(sorted(set(partitions)))


_MAX_INT32 = 2**31 - 1
_MAX_INT64 = 2**63 - 1


def _groups_reset_offsets(args: argparse.Namespace) -> int:
    from kafka.errors import KafkaError

    from coordinator_api._inspect import RESET_COLUMNS, NoLogError, reset_offsets, reset_rows

    target: Any = "earliest" if args.to_earliest else "latest" if args.to_latest else args.to_offset
    try:
        plan = reset_offsets(
            args.bootstrap_server,
            args.group,
            args.topic,
            target,
            execute=args.execute,
            timeout_ms=args.timeout_ms,
        )
    except NoLogError as exc:
        flag = "--to-earliest" if args.to_earliest else "--to-latest"
        raise CoordinatorApiError(
            f"{args.bootstrap_server} keeps no log (ListOffsets answered INVALID_REQUEST; the embedded "
            f"coordinator has none), so it has no {target} offset for {flag}: give the offset with "
            "--to-offset N"
        ) from exc
    except KafkaError as exc:
        raise _server_error(args, exc) from exc
    if args.json:
        document = {
            "group_id": args.group,
            "executed": args.execute,
            "offsets": [
                {
                    "topic": r.topic,
                    "partition": r.partition,
                    "current_offset": r.current_offset,
                    "new_offset": r.new_offset,
                }
                for r in plan
            ],
        }
        print(json.dumps(document, indent=2))
    else:
        _print_table(RESET_COLUMNS, reset_rows(plan))
    return 0


def _groups_delete_offsets(args: argparse.Namespace) -> int:
    from kafka.errors import KafkaError

    from coordinator_api._inspect import (
        DELETE_OFFSETS_COLUMNS,
        OFFSET_DELETE_HINTS,
        delete_offsets,
        deletion_rows,
    )

    try:
        deletions = delete_offsets(args.bootstrap_server, args.group, args.topic, timeout_ms=args.timeout_ms)
    except KafkaError as exc:
        raise _server_error(args, exc) from exc
    if args.json:
        document = {
            "group_id": args.group,
            "offsets": [{"topic": d.topic, "partition": d.partition, "error": d.error} for d in deletions],
        }
        print(json.dumps(document, indent=2))
    else:
        _print_table(DELETE_OFFSETS_COLUMNS, deletion_rows(deletions))
    # The partitions refused, by refusal, named as --topic names them (t:0,1 and u:0).
    refused: dict[str, dict[str, list[str]]] = {}
    for d in deletions:
        if d.error is not None:
            refused.setdefault(d.error, {}).setdefault(d.topic, []).append(str(d.partition))
    if refused:
        raise CoordinatorApiError(
            "; ".join(
                f"cannot delete the offsets of group {args.group!r} of "
                + " and ".join(f"{topic}:{','.join(parts)}" for topic, parts in where.items())
                + f": {error}"
                + (f" ({OFFSET_DELETE_HINTS[error]})" if error in OFFSET_DELETE_HINTS else "")
                for error, where in refused.items()
            )
        )
    return 0


def _admin_client(args: argparse.Namespace, client_id: str, **settings: Any) -> Any:
    """kafka-python's admin client for ``--bootstrap-server``, bounded by ``--timeout-ms``."""
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError

    try:
        return KafkaAdminClient(
            bootstrap_servers=args.bootstrap_server,
            client_id=client_id,
            request_timeout_ms=args.timeout_ms,
            bootstrap_timeout_ms=args.timeout_ms,
            **settings,
        )
    except KafkaError as exc:
        raise _unreachable(args, exc) from exc


def _topics(args: argparse.Namespace) -> int:
    from kafka.errors import for_code

    admin = _admin_client(args, "coordinator-api-topics")
    try:
        if args.topics_command in ("create", "alter", "delete"):
            return _change_topic(args, admin)
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


def _change_topic(args: argparse.Namespace, admin: Any) -> int:
    """``topics create``, ``alter`` (more partitions) and ``delete``: one request about one
    topic, a refusal named as Kafka names it."""
    from kafka.admin import NewPartitions
    from kafka.errors import KafkaError, for_code

    topic, command = args.topic, args.topics_command
    try:
        if command == "create":
            wanted = {"num_partitions": args.partitions, "replication_factor": args.replication_factor}
            (created,) = admin.create_topics({topic: wanted}, raise_errors=False)["topics"]
            error, message = created["error_code"], created["error_message"]
        elif command == "alter":
            grown = admin.create_partitions({topic: NewPartitions(args.partitions)}, raise_errors=False)
            (result,) = grown.results
            error, message = result.error_code, result.error_message
        else:
            (deleted,) = admin.delete_topics([topic], raise_errors=False)["topics"]
            error, message = deleted["error_code"], deleted["error_message"]
    except KafkaError as exc:
        raise _unreachable(args, exc) from exc
    shown: dict[str, object] = {"topic": topic, "deleted": True}
    if command == "delete":
        doing, done = f"delete topic {topic!r}", f"deleted topic {topic}"
    else:
        shown = {"topic": topic, "partitions": args.partitions}
        count = f"{args.partitions} partition(s)"
        if command == "create":
            doing, done = f"create topic {topic!r}", f"created topic {topic} with {count}"
        else:
            doing = f"give topic {topic!r} {args.partitions} partitions"
            done = f"topic {topic} has {count} now"
    if error:
        reason = for_code(error).__name__ + (f": {message}" if message else "")
        raise CoordinatorApiError(f"cannot {doing}: {reason}")
    print(json.dumps(shown) if args.json else done)
    return 0


def _server_error(args: argparse.Namespace, exc: Exception) -> CoordinatorApiError:
    """A server's error answer named as Kafka names it; anything else, as no answer."""
    from kafka.errors import BrokerResponseError

    if isinstance(exc, BrokerResponseError) and exc.errno:
        detail = " ".join(str(exc.args[0]).split()) if exc.args else ""
        return CoordinatorApiError(
            f"{args.bootstrap_server} answered {type(exc).message}" + (f" ({detail})" if detail else "")
        )
    return _unreachable(args, exc)


def _unreachable(args: argparse.Namespace, exc: Exception) -> CoordinatorApiError:
    return CoordinatorApiError(
        f"no answer from {args.bootstrap_server} within {args.timeout_ms} ms ({type(exc).__name__}); "
        "is a coordinator or Kafka broker listening there? (--bootstrap-server, --timeout-ms)"
    )


# --- acls (kafka-acls) ------------------------------------------------------------------------

#: The fields of each ACL in ``acls list --json`` (and ``add``/``remove --json``), in order.
ACL_FIELDS = (
    "resource_type",
    "resource_name",
    "pattern_type",
    "principal",
    "host",
    "operation",
    "permission",
)


def _acl_operation(text: str) -> Any:
    """An operation as kafka-acls spells it (Read, DescribeConfigs, All)."""
    from coordinator_api.server._acls import AclOperation

    wanted = text.replace("-", "").replace("_", "").lower()
    for op in AclOperation:
        if op.name.replace("_", "").lower() == wanted and op not in (AclOperation.ANY, AclOperation.UNKNOWN):
            return op
    names = ", ".join(
        "".join(w.capitalize() for w in op.name.split("_"))
        for op in AclOperation
        if op not in (AclOperation.ANY, AclOperation.UNKNOWN)
    )
    raise ConfigurationError(f"--operation {text!r} is not an operation: give one of {names}")


def _acl_resources(args: argparse.Namespace) -> list[tuple[Any, str]]:
    from coordinator_api.server._acls import CLUSTER_NAME, ResourceType

    chosen = [(ResourceType.GROUP, g) for g in args.group] + [(ResourceType.TOPIC, t) for t in args.topic]
    if args.cluster:
        chosen.append((ResourceType.CLUSTER, CLUSTER_NAME))
    return chosen


def _acl_entries(args: argparse.Namespace) -> list[tuple[str, str, Any]]:
    """(principal, host, permission) of each --allow/--deny principal and host, as kafka-acls
    pairs them: every principal from every host given for its kind (default ``*``)."""
    from coordinator_api.server._acls import WILDCARD, AclPermission

    entries = []
    for principals, hosts, permission in (
        (args.allow_principal, args.allow_host, AclPermission.ALLOW),
        (args.deny_principal, args.deny_host, AclPermission.DENY),
    ):
        if hosts and not principals:
            kind = permission.name.lower()
            raise ConfigurationError(f"--{kind}-host needs --{kind}-principal")
        entries += [(p, h, permission) for p in principals for h in hosts or [WILDCARD]]
    return entries


def _acl_document(acl: Any) -> dict[str, str]:
    return {
        "resource_type": acl.resource_pattern.resource_type.name,
        "resource_name": acl.resource_pattern.resource_name,
        "pattern_type": acl.resource_pattern.pattern_type.name,
        "principal": acl.principal,
        "host": acl.host,
        "operation": acl.operation.name,
        "permission": acl.permission_type.name,
    }


def _print_acls(args: argparse.Namespace, acls: Sequence[Any], *, verb: str = "") -> None:
    documents = sorted((_acl_document(a) for a in acls), key=lambda d: tuple(d[f] for f in ACL_FIELDS))
    if args.json:
        print(json.dumps(documents, indent=2))
        return
    rows = [tuple(d[f] for f in ACL_FIELDS) for d in documents]
    if verb:
        for row in rows:
            print(f"{verb} ACL: " + " ".join(row))
    else:
        _print_table(tuple(f.upper().replace("_", "-") for f in ACL_FIELDS), rows)


def _acls(args: argparse.Namespace) -> int:
    from kafka.admin import (
        ACL,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePattern,
        ResourceType,
    )
    from kafka.errors import IncompatibleBrokerVersion, KafkaError, NoError, SecurityDisabledError

    from coordinator_api.server._acls import AclBinding, check_principal

    # Checked here, not by argparse, so that a bad value costs one line.
    args.operation = [_acl_operation(op) for op in args.operation]
    for principal in (
        *args.allow_principal,
        *args.deny_principal,
        *([args.principal] if args.principal else []),
    ):
        check_principal(principal)
    resources = _acl_resources(args)
    entries = _acl_entries(args)
    pattern = ACLResourcePatternType[args.resource_pattern_type.upper()]
    if args.acls_command == "add":
        if not resources or not entries or not args.operation:
            raise ConfigurationError(
                "acls add needs a resource (--group, --topic or --cluster), a principal (--allow-principal "
                "or --deny-principal) and an --operation"
            )
        for (kind, name), (principal, host, permission), op in (
            (r, e, o) for r in resources for e in entries for o in args.operation
        ):  # checked here, so that nothing is sent unless all are valid
            AclBinding.of(
                resource_type=kind,
                name=name,
                pattern_type=pattern.value,
                principal=principal,
                host=host,
                operation=op,
                permission=permission,
            )
    elif args.acls_command == "remove" and not resources:
        raise ConfigurationError("acls remove needs a resource: --group, --topic or --cluster")
    admin = _admin_client(args, "coordinator-api-acls", **_client_settings(args.command_config))
    try:
        if args.acls_command == "add":
            wanted = [
                ACL(
                    principal,
                    host,
                    ACLOperation(op.value),
                    ACLPermissionType(permission.value),
                    ResourcePattern(ResourceType(kind.value), name, pattern),
                )
                for kind, name in resources
                for principal, host, permission in entries
                for op in args.operation
            ]
            result = admin.create_acls(wanted)
            if result["failed"]:
                if all(error is SecurityDisabledError for error in result["failed"]):
                    raise _no_authorizer(args)
                reasons = sorted({error.message for error in result["failed"]})
                raise CoordinatorApiError(
                    f"{args.bootstrap_server} refused {len(result['failed'])} of {len(wanted)} ACL(s): "
                    + ", ".join(reasons)
                )
            _print_acls(args, wanted, verb="added")
            return 0
        filters = _acl_filters(args, resources, entries, pattern)
        if args.acls_command == "list":
            found: list[Any] = []
            for chosen in filters:
                found += [a for a in admin.describe_acls(chosen)[0] if a not in found]
            _print_acls(args, found)
            return 0
        removed: list[Any] = []
        for _, matched, error in admin.delete_acls(filters):
            if error is SecurityDisabledError:
                raise _no_authorizer(args)
            if error is not NoError:
                raise CoordinatorApiError(f"{args.bootstrap_server} answered {error.message}")
            removed += [a for a in matched if a not in removed]
        _print_acls(args, removed, verb="removed")
        return 0
    except (IncompatibleBrokerVersion, SecurityDisabledError) as exc:
        raise _no_authorizer(args) from exc
    except KafkaError as exc:
        raise _server_error(args, exc) from exc
    finally:
        admin.close()


def _no_authorizer(args: argparse.Namespace) -> CoordinatorApiError:
    return CoordinatorApiError(
        f"{args.bootstrap_server} has no authorizer, so no ACLs (the embedded coordinator: serve "
        "--authorizer; a Kafka cluster: authorizer.class.name)"
    )


def _acl_filters(
    args: argparse.Namespace,
    resources: list[tuple[Any, str]],
    entries: list[tuple[str, str, Any]],
    pattern: Any,
) -> list[Any]:
    """The filters of ``acls list`` and ``acls remove``, as kafka-acls builds them: every ACL of
    each resource given (of every resource without one), narrowed to the principals, hosts and
    operations given."""
    from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ResourcePatternFilter, ResourceType

    patterns = [
        ResourcePatternFilter(ResourceType(kind.value), name, pattern) for kind, name in resources
    ] or [ResourcePatternFilter(ResourceType.ANY, None, type(pattern).ANY)]
    who: list[tuple[str | None, str | None, Any]] = [
        (p, h, ACLPermissionType(perm.value)) for p, h, perm in entries
    ] or [(args.principal, None, ACLPermissionType.ANY)]
    operations = [ACLOperation(op.value) for op in args.operation] or [ACLOperation.ANY]
    return [
        ACLFilter(principal, host, op, permission, chosen)
        for chosen in patterns
        for principal, host, permission in who
        for op in operations
    ]


_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def _client_settings(path: str | None) -> dict[str, Any]:
    """kafka-python's settings from a client properties file (``--command-config``, as Kafka's
    tools take it): security.protocol, sasl.mechanism, the user and password (sasl.username and
    sasl.password, or Java's sasl.jaas.config), ssl.ca.location."""
    if path is None:
        return {}
    import re

    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise ConfigurationError(f"cannot read --command-config {path}: {exc}") from None
    props = {}
    for raw in lines:
        line = raw.strip()
        if line and not line.startswith(("#", "!")):
            key, sep, value = line.partition("=")
            if not sep:
                raise ConfigurationError(f"--command-config {path}: {line!r} is not KEY=VALUE")
            props[key.strip()] = value.strip()
    settings: dict[str, Any] = {}
    names = {
        "security.protocol": "security_protocol",
        "sasl.mechanism": "sasl_mechanism",
        "sasl.username": "sasl_plain_username",
        "sasl.password": "sasl_plain_password",
        "ssl.ca.location": "ssl_cafile",
    }
    for key, value in props.items():
        if key == "security.protocol" and value.upper() not in _SECURITY_PROTOCOLS:
            known = ", ".join(_SECURITY_PROTOCOLS)
            raise ConfigurationError(
                f"--command-config {path}: security.protocol {value!r} is not one of {known}"
            )
        if key in names:
            settings[names[key]] = value.upper() if key == "security.protocol" else value
        elif key == "sasl.jaas.config":
            for field in ("username", "password"):
                found = re.search(rf'{field}="([^"]*)"', value)
                if found:
                    settings[f"sasl_plain_{field}"] = found.group(1)
        else:
            known = ", ".join([*names, "sasl.jaas.config"])
            raise ConfigurationError(f"--command-config {path}: unknown property {key!r}; known: {known}")
    return settings


def _plugins(args: argparse.Namespace) -> int:
    report, failed = plugins_report()
    print(report, end="")
    return 1 if failed else 0


GROUPS_COMMANDS = ("list", "describe", "delete", "reset-offsets", "delete-offsets")


def _add_groups_commands(commands: Any, anywhere: list[argparse.ArgumentParser]) -> None:
    groups = commands.add_parser(
        "groups",
        help="list, describe, delete groups and reset or delete their offsets (kafka-consumer-groups)",
        description="The groups of the embedded coordinator or of any Kafka cluster, of every protocol "
        "type, as kafka-consumer-groups shows consumer groups. `groups` alone lists them and "
        "`groups GROUP` describes one; a group named list, describe, delete, reset-offsets or "
        "delete-offsets needs `groups describe GROUP`.",
        parents=anywhere,
    )
    actions = groups.add_subparsers(
        dest="groups_command", required=True, metavar="{" + ",".join(GROUPS_COMMANDS) + "}"
    )
    server = _server_flags()
    listing = actions.add_parser(
        "list",
        help="every group: id, protocol type, state",
        description="List every group the server knows: its id, protocol type and state.",
        parents=[*anywhere, server],
    )
    listing.set_defaults(func=_groups_list)

    describe = actions.add_parser(
        "describe",
        help="one group: state, members and their payloads in words, committed offsets",
        description="Describe a group. Without flags: its state, protocol, and members with their "
        "metadata and assignments, put in words by the installed plugins' payload decoders. The "
        "flags pick parts instead (any together): --state, --members, --offsets.",
        parents=[*anywhere, server],
    )
    describe.add_argument("group", help="the group to describe")
    describe.add_argument(
        "--state",
        action="store_true",
        help="only the group line: state, protocol type, protocol or assignor, member count, group "
        "epoch (incremental protocol)",
    )
    describe.add_argument(
        "--members",
        action="store_true",
        help="a table of the members: member id, instance id, client id, host, epoch, assignment",
    )
    describe.add_argument(
        "--offsets",
        action="store_true",
        help="a table of the committed offsets per partition, with log-end offset and lag where the "
        "server has a log ('-' on the embedded coordinator) and the member that owns the partition",
    )
    describe.set_defaults(func=_groups_describe)

    delete = actions.add_parser(
        "delete",
        help="delete groups that have no members, with their committed offsets",
        description="Delete groups and their committed offsets (DeleteGroups). A group with members "
        "is refused (NON_EMPTY_GROUP), an unknown one too (GROUP_ID_NOT_FOUND): exit status 2.",
        parents=[*anywhere, server],
    )
    delete.add_argument("groups", nargs="+", metavar="GROUP", help="the groups to delete")
    delete.set_defaults(func=_groups_delete)

    reset = actions.add_parser(
        "reset-offsets",
        help="plan, and with --execute commit, new offsets for a group without active members",
        description="Print the new committed offsets of a group (topic, partition, current offset, "
        "new offset) and, with --execute, commit them (OffsetCommit with generation -1), as "
        "kafka-consumer-groups --reset-offsets does. Kafka and the embedded coordinator accept the "
        "commit only while the group has no active members.",
        parents=[*anywhere, server],
    )
    reset.add_argument("group", help="the group whose offsets to reset")
    _add_topic_partitions(reset)
    to = reset.add_mutually_exclusive_group(required=True)
    to.add_argument(
        "--to-earliest",
        action="store_true",
        help="to each partition's earliest offset (needs a server with a log: a Kafka cluster)",
    )
    to.add_argument(
        "--to-latest",
        action="store_true",
        help="to each partition's log-end offset (needs a server with a log: a Kafka cluster)",
    )
    to.add_argument(
        "--to-offset",
        type=bounded(0, _MAX_INT64),
        metavar="N",
        help="to offset N (on a Kafka cluster, moved into the log's range as kafka-consumer-groups does)",
    )
    mode = reset.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="only print the plan (the default)")
    mode.add_argument("--execute", action="store_true", help="commit the plan")
    reset.set_defaults(func=_groups_reset_offsets)

    forget = actions.add_parser(
        "delete-offsets",
        help="delete a group's committed offsets of topics its members do not subscribe to",
        description="Delete committed offsets of a group (OffsetDelete), as kafka-consumer-groups "
        "--delete-offsets does, and print each partition: deleted, or why not. A partition of a "
        "topic the group's members subscribe to is refused (GROUP_SUBSCRIBED_TO_TOPIC), and so is a "
        "group with members of another protocol than Kafka's consumer protocol (NON_EMPTY_GROUP): "
        "exit status 2.",
        parents=[*anywhere, server],
    )
    forget.add_argument("group", help="the group whose offsets to delete")
    _add_topic_partitions(forget)
    forget.set_defaults(func=_groups_delete_offsets)


def _groups_shorthand(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``groups`` alone lists, ``groups GROUP`` describes: spell out the action argparse needs,
    and put it right after ``groups`` (so flags may come before it)."""
    at, _ = _next_positional(parser, argv, 0)
    if at is None or argv[at] != "groups":
        return argv
    groups = _subcommand(parser, "groups")
    found, after_dashes = _next_positional(_subcommand(groups, "describe"), argv, at + 1)
    rest = argv[at + 1 :]
    if found is None:
        if any(arg in ("-h", "--help") for arg in rest):
            return argv  # the help of `groups`
        action = "list"
    elif argv[found] in GROUPS_COMMANDS and not after_dashes:
        action = argv[found]
        rest = argv[at + 1 : found] + argv[found + 1 :]
    else:
        action = "describe"
    return [*argv[: at + 1], action, *rest]


def _next_positional(parser: argparse.ArgumentParser, argv: list[str], start: int) -> tuple[int | None, bool]:
    """The index of the first positional argument from ``start`` (skipping options and their
    values as ``parser`` reads them), and whether it follows ``--``."""
    i = start
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return (i + 1, True) if i + 1 < len(argv) else (None, True)
        if not arg.startswith("-") or arg == "-":
            return i, False
        i += 1
        if "=" not in arg and _takes_value(parser, arg):
            i += 1
    return None, False


def _takes_value(parser: argparse.ArgumentParser, option: str) -> bool:
    matched = {
        action
        for name, action in parser._option_string_actions.items()
        if name == option or (option.startswith("--") and name.startswith(option))
    }
    exact = parser._option_string_actions.get(option)
    action = exact if exact is not None else next(iter(matched)) if len(matched) == 1 else None
    return action is not None and action.nargs != 0


def _subcommand(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    (subcommands,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    chosen: argparse.ArgumentParser = subcommands.choices[name]
    return chosen


def _add_topic_partitions(command: argparse.ArgumentParser) -> None:
    """``--topic TOPIC[:P,P...]``, repeatable, of the commands that name partitions."""
    command.add_argument(
        "--topic",
        action="append",
        required=True,
        type=_partition_spec,
        metavar="TOPIC[:P,P...]",
        help="a topic, all its partitions or those listed (repeatable)",
    )


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
    serve.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=bounded(0, 65535), help="port; 0 picks a free one (default 9092)")
    serve.add_argument(
        "--listeners",
        metavar="LIST",
        help="listen on several addresses instead of --host and --port, as Kafka's listeners setting: "
        "NAME://HOST:PORT separated by commas, each listener's security protocol its name (PLAINTEXT, "
        "SSL, SASL_PLAINTEXT, SASL_SSL) or given by --listener-security-protocol-map; clients are told "
        "the address of the listener they connected to",
    )
    serve.add_argument(
        "--listener-security-protocol-map",
        metavar="LIST",
        help="listener.security.protocol.map: NAME:PROTOCOL separated by commas, for listeners not "
        "named after their security protocol (e.g. INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL)",
    )
    serve.add_argument(
        "--advertised-listeners",
        metavar="LIST",
        help="advertised.listeners: NAME://HOST:PORT separated by commas, the address clients of each "
        "listener are told to connect to (default: the listened host, or 127.0.0.1 for all addresses, "
        "and the listened port; port 0 here also means the listened port)",
    )
    serve.add_argument(
        "--allow-anonymous",
        action="store_true",
        default=None,
        help="accept clients that do not authenticate (no SASL, no required client certificate) on an "
        "address beyond loopback; without it such a listener does not start unless the authorizer "
        "decides what User:ANONYMOUS may do (default: off)",
    )
    serve.add_argument("--data-dir", help="directory for durable state; without it state is in memory")
    serve.add_argument(
        "--fresh-start",
        action="store_true",
        help="start empty even though --data-dir held state whose database is missing, empty or damaged "
        "(the old database is kept aside, renamed, never deleted)",
    )
    serve.add_argument(
        "--config",
        help="TOML file with [coordinator] settings, [topics] and [server] (listeners, TLS and SASL, "
        "each under its flag's name); flags override it",
    )
    serve.add_argument(
        "--ssl-certfile",
        metavar="PEM",
        help="speak TLS (Kafka's SSL security protocol) with this certificate chain; it must name the "
        "address clients connect to (default: plaintext)",
    )
    serve.add_argument(
        "--ssl-keyfile", metavar="PEM", help="the certificate's private key, if not in --ssl-certfile"
    )
    serve.add_argument(
        "--ssl-cafile", metavar="PEM", help="the CA certificates client certificates are checked against"
    )
    serve.add_argument(
        "--sasl-users-file",
        metavar="FILE",
        help="clients must authenticate with SASL (SASL_PLAINTEXT, or SASL_SSL with --ssl-certfile) as "
        "a user of this file (`coordinator-api users add`); default: no authentication",
    )
    serve.add_argument(
        "--sasl-mechanisms",
        metavar="LIST",
        help="sasl.enabled.mechanisms: comma-separated, of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 "
        "(default SCRAM-SHA-256,SCRAM-SHA-512)",
    )
    serve.add_argument(
        "--ssl-client-auth",
        choices=("none", "requested", "required"),
        help="ssl.client.auth: whether clients must present a certificate signed by --ssl-cafile "
        "(default none)",
    )
    serve.add_argument(
        "--network-thread",
        action="store_true",
        default=None,
        help="read and write the connections of plaintext listeners in a thread of C that answers "
        "steady heartbeats itself, as Kafka's network threads read a broker's; needs "
        "--heartbeat-hold-ms 0 (default: off)",
    )
    serve.add_argument(
        "--authorizer",
        action="store_true",
        default=None,
        help="check every request against the ACLs (`coordinator-api acls`) of the principal that sent it, "
        "as a Kafka broker with authorizer.class.name=StandardAuthorizer does (default: off, every client "
        "may do everything)",
    )
    serve.add_argument(
        "--super-users",
        metavar="LIST",
        help="super.users: principals allowed everything, separated by semicolons (User:admin;User:ops)",
    )
    serve.add_argument(
        "--allow-everyone-if-no-acl-found",
        action="store_true",
        default=None,
        help="allow.everyone.if.no.acl.found: a resource no ACL names is open to everyone (default: only "
        "to super users)",
    )
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
            type=bounded(0),
            default=None,
            help=f"{help_text}; default {shown}",
        )
    serve.set_defaults(func=_serve, default_log_level="INFO")

    _add_groups_commands(commands, anywhere)

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
        help="list, describe, create, grow or delete topics (kafka-topics)",
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
    create.add_argument("--partitions", type=bounded(1), default=1, help="partitions (default 1)")
    create.add_argument(
        "--replication-factor", type=bounded(1), default=1, help="replicas of each partition (default 1)"
    )
    create.set_defaults(func=_topics)
    alter = topic_commands.add_parser(
        "alter",
        help="give a topic more partitions (kafka-topics --alter --partitions)",
        parents=[*anywhere, server],
    )
    alter.add_argument("topic", help="the topic")
    alter.add_argument(
        "--partitions", type=bounded(1), required=True, help="its partitions in all, more than it has now"
    )
    alter.set_defaults(func=_topics)
    delete = topic_commands.add_parser(
        "delete",
        help="delete a topic, and every group's committed offsets of it (kafka-topics --delete)",
        parents=[*anywhere, server],
    )
    delete.add_argument("topic", help="the topic")
    delete.set_defaults(func=_topics)

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

    users = commands.add_parser(
        "users",
        help="the SASL users of `serve --sasl-users-file` (SCRAM credentials only, never a password)",
        description="Add, list and remove the users a coordinator with SASL accepts, as Kafka's "
        "kafka-configs --alter --add-config SCRAM-SHA-256=... does: the file holds each user's salted "
        "SCRAM credentials, readable by its owner only. A running coordinator reads it at each new "
        "authentication.",
        parents=anywhere,
    )
    users_commands = users.add_subparsers(dest="users_command", required=True)
    add = users_commands.add_parser(
        "add",
        help="add a user, or give it a new password (read from standard input, one line)",
        parents=anywhere,
    )
    add.add_argument("user", help="the user name (its principal is User:NAME)")
    add.add_argument("--users-file", required=True, help="the users file (made if missing)")
    add.add_argument(
        "--mechanism",
        action="append",
        choices=("SCRAM-SHA-256", "SCRAM-SHA-512"),
        help="the SCRAM mechanisms to make credentials for (repeatable; default both; PLAIN is checked "
        "against them)",
    )
    add.set_defaults(func=_users_add)
    listed = users_commands.add_parser("list", help="list the users and their mechanisms", parents=anywhere)
    listed.add_argument("--users-file", required=True, help="the users file")
    listed.add_argument("--json", action="store_true", help="print JSON: [{user, mechanisms}]")
    listed.set_defaults(func=_users_list)
    remove = users_commands.add_parser("remove", help="remove a user", parents=anywhere)
    remove.add_argument("user", help="the user name")
    remove.add_argument("--users-file", required=True, help="the users file")
    remove.set_defaults(func=_users_remove)
    _add_acls_commands(commands, anywhere)
    add_plugin_commands(commands, parents=anywhere)
    return parser


def _add_acls_commands(commands: Any, anywhere: list[argparse.ArgumentParser]) -> None:
    acls = commands.add_parser(
        "acls",
        help="add, list and remove ACLs (kafka-acls)",
        description="The ACLs of the embedded coordinator (serve --authorizer) or of any Kafka cluster with "
        "an authorizer, as kafka-acls manages them: who (--allow-principal/--deny-principal, from "
        "--allow-host/--deny-host) may do what (--operation) on which groups, topics or the cluster. "
        "Listing needs the cluster's DESCRIBE permission, changing them its ALTER permission.",
        parents=anywhere,
    )
    actions = acls.add_subparsers(dest="acls_command", required=True)
    server = _server_flags()
    server.add_argument(
        "--command-config",
        metavar="FILE",
        help="client properties, as Kafka's tools take them: security.protocol, sasl.mechanism, "
        "sasl.username and sasl.password (or sasl.jaas.config), ssl.ca.location",
    )
    for name, help_text, patterns in (
        ("add", "add ACLs: every principal x host x operation x resource given", ("literal", "prefixed")),
        (
            "list",
            "list ACLs: all, or those of the resources, --principal and --operation given",
            ("any", "match", "literal", "prefixed"),
        ),
        (
            "remove",
            "remove the ACLs of the resources given, or only those of the principals, hosts and "
            "operations given",
            ("any", "match", "literal", "prefixed"),
        ),
    ):
        action = actions.add_parser(
            name,
            help=help_text,
            description=help_text[0].upper() + help_text[1:] + ".",
            parents=[*anywhere, server],
        )
        action.add_argument(
            "--group", action="append", default=[], metavar="GROUP", help="a group (repeatable)"
        )
        action.add_argument(
            "--topic", action="append", default=[], metavar="TOPIC", help="a topic (repeatable)"
        )
        action.add_argument("--cluster", action="store_true", help="the cluster (kafka-cluster)")
        action.add_argument(
            "--resource-pattern-type",
            choices=patterns,
            default="literal",
            help=f"how the names given name resources: {', '.join(patterns)} (default literal: the name "
            "itself or the wildcard *; prefixed: every name that starts with it"
            + ("; match: every pattern that names it; any: every pattern" if "any" in patterns else "")
            + ")",
        )
        action.add_argument(
            "--operation",
            action="append",
            default=[],
            metavar="OP",
            help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, "
            "AlterConfigs, IdempotentWrite or All (repeatable)",
        )
        for kind in ("allow", "deny"):
            action.add_argument(
                f"--{kind}-principal",
                action="append",
                default=[],
                metavar="PRINCIPAL",
                help=f"User:NAME, or User:* for every user, to {kind} (repeatable)",
            )
            action.add_argument(
                f"--{kind}-host",
                action="append",
                default=[],
                metavar="HOST",
                help=f"an address the {kind} principals connect from, or * (repeatable; default *)",
            )
        if name == "list":
            action.add_argument("--principal", help="only the ACLs of this principal (User:NAME)")
        action.set_defaults(func=_acls, principal=None)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(_groups_shorthand(parser, list(sys.argv[1:] if argv is None else argv)))
    _configure_logging(args.log_level or getattr(args, "default_log_level", "WARNING"), args.log_format)
    try:
        result: int = args.func(args)
    except CoordinatorApiError as exc:
        print(f"coordinator-api: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return result
