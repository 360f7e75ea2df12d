"""The plugin manager factory, the typed hook wrapper and the registries, in process."""

from __future__ import annotations

import importlib
import inspect
import itertools
import logging
import pkgutil
import re
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pluggy
import pytest
from coordinator_consumer._protocol import CLASSIC_PAYLOADS
from plugin_sites import install_distribution

import coordinator_api._plugins
from coordinator_api import ClassicPayloads, ConfigurationError, Coordinator, JoinedMember
from coordinator_api._cli import build_parser
from coordinator_api._plugins import (
    NAME,
    AssignorRegistry,
    CommandRegistry,
    DuplicateRegistrationError,
    MemberEvent,
    NotRegisteredError,
    PayloadDecoderRegistry,
    PluginError,
    PluginHooks,
    PluginLoadError,
    PluginRegistry,
    ProtocolRegistry,
    ServerAssignorRegistry,
    disabled_plugins,
    get_plugin_manager,
    hookimpl,
    load_failures,
    spec,
)

_names = itertools.count()


@pytest.fixture
def installed_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, str], None]]:
    """Installs a plugin (a module written by the test) with a real entry point, in a
    distribution of its own on a throwaway sys.path entry, as pip would."""
    site = tmp_path / "site"
    monkeypatch.syspath_prepend(str(site))
    modules: list[str] = []

    def add(name: str, source: str) -> None:
        module = f"plugin_{name.replace('-', '_')}_{next(_names)}"
        install_distribution(
            site,
            name=f"test-plugin-{name}",
            version="1.0",
            entry_points={NAME: {name: module}},
            modules={module: textwrap.dedent(source)},
        )
        importlib.invalidate_caches()
        modules.append(module)

    yield add
    for module in modules:
        sys.modules.pop(module, None)


class Member(Coordinator):
    """A Coordinator that never connects in these tests (members connect on first use)."""

    def __init__(
        self, group_id: str, bootstrap_servers: str | list[str], *, kind: str = "test", **options: Any
    ):
        super().__init__(group_id, bootstrap_servers, **options)
        self.kind = kind

    def protocol_type(self) -> str:
        return self.kind

    def metadata(self) -> list[tuple[str, bytes]]:
        return [("only", b"")]

    def perform_assignment(
        self, leader_id: str, protocol: str, members: list[JoinedMember]
    ) -> dict[str, bytes]:
        return {}

    def on_join_complete(self, generation: int, member_id: str, protocol: str, assignment: bytes) -> None:
        pass


class ProtocolPlugin:
    def __init__(self, protocol_type: str) -> None:
        self.protocol_type = protocol_type

    @hookimpl
    def coordinator_api_register_protocols(self, registry: ProtocolRegistry) -> None:
        registry.register(self.protocol_type, Member)


def run_cli(*argv: str) -> int:
    """``coordinator-api ARGV`` in process, without ``main``'s logging set-up."""
    args = build_parser().parse_args(argv)
    result: int = args.func(args)
    return result


def manager(**plugins: object) -> pluggy.PluginManager:
    pm = get_plugin_manager(load_entrypoints=False)
    for name, plugin in plugins.items():
        pm.register(plugin, name=name)
    return pm


def test_nothing_builds_a_plugin_manager_at_import_time() -> None:
    package = coordinator_api._plugins
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        module = importlib.import_module(info.name)
        assert not [v for v in vars(module).values() if isinstance(v, pluggy.PluginManager)], info.name


def test_one_name_for_markers_hooks_and_entry_points() -> None:
    assert NAME == "coordinator_api"
    assert hookimpl.project_name == NAME
    pm = get_plugin_manager(load_entrypoints=False)
    assert pm.project_name == NAME
    hooks = [name for name, _ in inspect.getmembers(spec, inspect.isfunction) if name.startswith(NAME)]
    assert hooks, "spec.py defines no hooks"
    assert all(getattr(pm.hook, name).has_spec() for name in hooks)


def test_the_typed_wrapper_has_a_method_for_every_hook() -> None:
    hooks = [name for name, _ in inspect.getmembers(spec, inspect.isfunction) if name.startswith(NAME + "_")]
    for hook in hooks:
        method = getattr(PluginHooks, hook.removeprefix(NAME + "_"), None)
        assert method is not None, f"PluginHooks has no method for {hook}"
        spec_params = list(inspect.signature(getattr(spec, hook)).parameters)
        assert list(inspect.signature(method).parameters)[1:] == spec_params


def test_a_plugin_installed_with_an_entry_point_registers_and_is_blocked_by_name(
    installed_plugin: Callable[[str, str], None],
) -> None:
    installed_plugin(
        "sample",
        """
        from coordinator_api._plugins import hookimpl

        @hookimpl
        def coordinator_api_register_assignors(registry):
            registry.register("sample", "first", lambda members: {})
        """,
    )
    pm = get_plugin_manager()
    assert pm.get_plugin("sample") is not None
    registry = PluginRegistry.load(pm)
    assert registry.assignors.names("sample") == ["first"]
    assert registry.registered_by("sample") == ["assignor sample/first"]
    # Blocked by name, as the built-in ones are.
    assert get_plugin_manager(blocked=["sample"]).get_plugin("sample") is None


def test_the_disable_variable_is_read_when_the_manager_is_built(
    monkeypatch: pytest.MonkeyPatch, installed_plugin: Callable[[str, str], None]
) -> None:
    installed_plugin("sample", "")
    assert disabled_plugins({"COORDINATOR_API_DISABLE_PLUGINS": " one, ,two ,"}) == ["one", "two"]
    assert disabled_plugins({}) == []
    monkeypatch.setenv("COORDINATOR_API_DISABLE_PLUGINS", "sample,other")
    pm = get_plugin_manager()
    assert pm.is_blocked("sample") and pm.is_blocked("other")
    assert pm.get_plugin("sample") is None
    monkeypatch.delenv("COORDINATOR_API_DISABLE_PLUGINS")
    assert get_plugin_manager().get_plugin("sample") is not None


def test_a_misspelt_hook_leaves_its_plugin_out_with_the_likely_name_and_the_others_in(
    installed_plugin: Callable[[str, str], None], caplog: pytest.LogCaptureFixture
) -> None:
    installed_plugin(
        "typo",
        """
        from coordinator_api._plugins import hookimpl

        @hookimpl
        def coordinator_api_register_protocol(registry):
            pass

        @hookimpl
        def coordinator_api_register_assignors(registry):
            registry.register("typo-type", "never", len)
        """,
    )
    pm = get_plugin_manager()
    (failure,) = load_failures(pm)
    assert failure.plugin == "typo" and pm.get_plugin("typo") is None
    assert (
        "implements hooks that do not exist: coordinator_api_register_protocol "
        "(did you mean coordinator_api_register_protocols?)"
    ) in str(failure)
    assert "COORDINATOR_API_DISABLE_PLUGINS=typo" in str(failure)
    assert str(failure) in caplog.text  # logged as a warning
    # Nothing of it is registered; every other plugin is.
    registry = PluginRegistry.load(pm)
    assert registry.assignors.names("typo-type") == []
    assert "consumer" in registry.protocols and registry.failures == (failure,)


def test_a_hook_with_an_argument_the_spec_lacks_is_refused(
    installed_plugin: Callable[[str, str], None],
) -> None:
    installed_plugin(
        "wrong",
        """
        from coordinator_api._plugins import hookimpl

        @hookimpl
        def coordinator_api_register_protocols(registry, config):
            pass
        """,
    )
    pm = get_plugin_manager()
    (failure,) = load_failures(pm)
    assert failure.plugin == "wrong" and pm.get_plugin("wrong") is None
    invalid = r"(?s)plugin 'wrong' .*is invalid.*declared in the hookimpl but can not be found"
    assert re.search(invalid, str(failure))
    assert pm.get_plugin("consumer") is not None


def test_two_plugins_registering_a_protocol_type_fail_naming_both() -> None:
    pm = manager(first=ProtocolPlugin("shards"), second=ProtocolPlugin("shards"))
    with pytest.raises(DuplicateRegistrationError) as caught:
        PluginRegistry.load(pm)
    error = caught.value
    assert (error.what, error.key, error.first_plugin, error.second_plugin) == (
        "protocol type",
        "shards",
        "first",
        "second",
    )
    assert str(error) == (
        "protocol type 'shards' is registered by plugin 'first' and again by plugin 'second'; uninstall "
        "one of them, or disable one with COORDINATOR_API_DISABLE_PLUGINS=second"
    )
    assert PluginRegistry.load(manager(first=ProtocolPlugin("shards"), second=ProtocolPlugin("leases")))


@pytest.mark.parametrize(
    ("registry", "register", "message"),
    [
        (AssignorRegistry(), lambda r: r.register("t", "range", len), "assignor 't/range'"),
        (
            PayloadDecoderRegistry(),
            lambda r: r.register("t", metadata=lambda p, b: "", assignment=lambda p, b: ""),
            "payload decoder 't'",
        ),
        (CommandRegistry(), lambda r: r.register("hello", help="hi", run=lambda args: 0), "command 'hello'"),
    ],
)
def test_every_registry_refuses_duplicates(
    registry: Any, register: Callable[[Any], None], message: str
) -> None:
    with registry._registering_for("alpha"):
        register(registry)
    with (
        registry._registering_for("beta"),
        pytest.raises(DuplicateRegistrationError, match=message) as caught,
    ):
        register(registry)
    assert (caught.value.first_plugin, caught.value.second_plugin) == ("alpha", "beta")
    assert registry.summary() == [("alpha", message.replace("'", ""))]


def test_each_plugin_gets_credit_for_what_it_registers() -> None:
    class Everything:
        @hookimpl
        def coordinator_api_register_assignors(self, registry: AssignorRegistry) -> None:
            registry.register("shards", "sticky", len)

        @hookimpl
        def coordinator_api_register_cli_commands(self, registry: CommandRegistry) -> None:
            registry.register("hello", help="hi", run=lambda args: 0)

    registry = PluginRegistry.load(manager(proto=ProtocolPlugin("shards"), extra=Everything()))
    assert registry.registered_by("proto") == ["protocol type shards"]
    assert registry.registered_by("extra") == ["assignor shards/sticky", "command hello"]
    assert registry.assignors.names("shards") == ["sticky"]
    assert registry.assignors.get("shards", "sticky") is len


def test_a_plugin_whose_hook_raises_is_named_and_left_out_with_what_it_registered() -> None:
    class Broken:
        @hookimpl
        def coordinator_api_register_protocols(self, registry: ProtocolRegistry) -> None:
            registry.register("half-done", Member)
            raise RuntimeError("no config file")

    pm = manager(fine=ProtocolPlugin("shards"), broken=Broken())
    registry = PluginRegistry.load(pm)
    (failure,) = registry.failures
    assert failure.plugin == "broken" and pm.get_plugin("broken") is None
    assert "plugin 'broken' raised in coordinator_api_register_protocols" in str(failure)
    assert isinstance(failure.__cause__, RuntimeError)
    assert registry.protocols.protocol_types() == ["shards"]  # not "half-done"


def test_protocols_are_created_by_protocol_type() -> None:
    protocols = PluginRegistry.load(manager(proto=ProtocolPlugin("test"))).protocols
    assert "test" in protocols
    assert protocols.protocol_types() == ["test"]
    member = protocols.create(
        "test", "group", "127.0.0.1:9", session_timeout_ms=3000, heartbeat_interval_ms=100
    )
    assert isinstance(member, Member)
    member.close()
    with pytest.raises(
        NotRegisteredError, match=r"no plugin registers protocol type 'nope' \(installed: test\)"
    ):
        protocols.get("nope")


def test_a_factory_must_make_members_of_its_protocol_type() -> None:
    protocols = PluginRegistry.load(manager(liar=ProtocolPlugin("shards"))).protocols  # makes kind "test"
    with pytest.raises(PluginError, match=r"plugin 'liar' registered protocol type 'shards'.*'test'"):
        protocols.create("shards", "group", "127.0.0.1:9")


def test_registrations_are_checked_on_the_spot() -> None:
    with pytest.raises(ValueError, match="protocol type must be a non-empty string"):
        ProtocolRegistry().register("", Member)
    with pytest.raises(ValueError, match="factory must be a Coordinator subclass"):
        ProtocolRegistry().register("t", "not callable")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="command name must be lower-case"):
        CommandRegistry().register("Hello World", help="", run=lambda args: 0)


def test_payloads_are_described_by_their_decoder_or_shown_as_bytes() -> None:
    decoders = PayloadDecoderRegistry()
    decoders.register(
        "shards",
        metadata=lambda protocol, data: f"{protocol} metadata {data.decode()}",
        assignment=lambda protocol, data: f"owns {data.decode()}",
    )
    assert decoders.describe_assignment("shards", "rr", b"s0") == "owns s0"
    assert decoders.describe_metadata("shards", "rr", b"v1") == "rr metadata v1"
    assert decoders.describe_assignment("other", "rr", b"abc") == "3 bytes (616263; no decoder installed)"
    assert decoders.describe_metadata("other", "rr", bytes(20)).startswith("20 bytes (" + "00" * 16 + "...")
    with pytest.raises(NotRegisteredError):
        decoders.get("other")


def test_every_observer_sees_each_member_event_even_if_one_raises(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[tuple[str, MemberEvent]] = []

    class Observer:
        def __init__(self, name: str, fail: bool = False) -> None:
            self.name, self.fail = name, fail

        @hookimpl
        def coordinator_api_on_member_event(self, event: MemberEvent) -> None:
            seen.append((self.name, event))
            if self.fail:
                raise RuntimeError("observer bug")

    hooks = PluginHooks(manager(a=Observer("a"), b=Observer("b", fail=True), c=Observer("c")))
    event = MemberEvent(kind="assigned", group_id="g", member_id="m-1", generation_id=3, duration_ms=12.5)
    with caplog.at_level(logging.ERROR, logger="coordinator_api.plugins"):
        hooks.on_member_event(event)
    assert sorted(name for name, _ in seen) == ["a", "b", "c"]
    assert all(got is event for _, got in seen)
    assert "plugin 'b' raised in coordinator_api_on_member_event (assigned event of group 'g'" in caplog.text


def test_member_events_only_have_the_documented_kinds() -> None:
    for kind in ("joined", "assigned", "revoked", "lost", "left"):
        MemberEvent(kind=kind, group_id="g", member_id="", generation_id=-1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="kind must be one of assigned, joined, left, lost, revoked"):
        MemberEvent(kind="expired", group_id="g", member_id="", generation_id=-1)  # type: ignore[arg-type]


def test_plugin_commands_join_the_cli(
    installed_plugin: Callable[[str, str], None], capsys: pytest.CaptureFixture[str]
) -> None:
    installed_plugin(
        "greeter",
        """
        from coordinator_api._plugins import hookimpl

        def configure(parser):
            parser.add_argument("--name", required=True)

        def run(args):
            print(f"hello {args.name}")
            return 3

        @hookimpl
        def coordinator_api_register_cli_commands(registry):
            registry.register("hello", help="say hello", configure=configure, run=run)
        """,
    )
    assert run_cli("hello", "--name", "group") == 3
    assert capsys.readouterr().out == "hello group\n"
    assert run_cli("plugins") == 0
    out = capsys.readouterr().out
    assert "  greeter  from test-plugin-greeter 1.0\n" in out  # not built-in
    assert "  consumer  from coordinator-api" in out and "(built-in)" in out
    assert "    command hello\n" in out


def test_a_plugin_command_cannot_take_a_builtin_name(
    installed_plugin: Callable[[str, str], None], capsys: pytest.CaptureFixture[str]
) -> None:
    installed_plugin(
        "squatter",
        """
        from coordinator_api._plugins import hookimpl

        @hookimpl
        def coordinator_api_register_cli_commands(registry):
            registry.register("serve", help="not the real one", run=lambda args: 99)
        """,
    )
    with pytest.raises(SystemExit):
        run_cli("serve", "--help")
    captured = capsys.readouterr()
    assert "command 'serve' is registered by plugin 'coordinator-api (built-in command)'" in captured.err
    assert "Run the embedded coordinator" in captured.out


def test_a_command_whose_parser_fails_says_why_and_the_other_commands_work(
    installed_plugin: Callable[[str, str], None], capsys: pytest.CaptureFixture[str]
) -> None:
    installed_plugin(
        "clumsy",
        """
        from coordinator_api._plugins import hookimpl

        def configure(parser):
            raise RuntimeError("no settings file")

        def ok(parser):
            parser.add_argument("--n", type=int, required=True)

        @hookimpl
        def coordinator_api_register_cli_commands(registry):
            registry.register("clumsy", help="breaks", configure=configure, run=lambda args: 0)
            registry.register("fine", help="works", configure=ok, run=lambda args: args.n)
        """,
    )
    with pytest.raises(PluginLoadError, match="plugin 'clumsy' failed to configure command 'clumsy'"):
        run_cli("clumsy")
    assert run_cli("fine", "--n", "4") == 4
    assert run_cli("plugins") == 0


def test_classic_payloads_are_registered_once_per_protocol_type_and_listed() -> None:
    registry = ServerAssignorRegistry()
    assert registry.classic_payloads("consumer") is None
    with registry._registering_for("first"):
        registry.register_classic_payloads("consumer", CLASSIC_PAYLOADS)
    assert registry.classic_payloads("consumer") is CLASSIC_PAYLOADS
    assert ("first", "classic payloads consumer") in registry.summary()
    with registry._registering_for("second"), pytest.raises(DuplicateRegistrationError) as caught:
        registry.register_classic_payloads("consumer", CLASSIC_PAYLOADS)
    assert (caught.value.first_plugin, caught.value.second_plugin) == ("first", "second")
    with pytest.raises(ConfigurationError, match="expected ClassicPayloads"):
        registry.register_classic_payloads("streams", object())  # type: ignore[arg-type]
    assert isinstance(CLASSIC_PAYLOADS, ClassicPayloads)
    # What the consumer plugin's payloads read, both ways.
    payload = CLASSIC_PAYLOADS.encode_assignment([("t", 1), ("t", 0)])
    assert CLASSIC_PAYLOADS.assignment(payload) == {("t", 0), ("t", 1)}
    with pytest.raises(ValueError, match="not a consumer-protocol subscription"):
        CLASSIC_PAYLOADS.subscription(b"GET / HTTP/1.1")
