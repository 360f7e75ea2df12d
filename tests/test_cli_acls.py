"""``coordinator-api acls`` (kafka-acls) and ``serve``'s authorizer flags, run as real processes."""

from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_cli import CLI, cli, error_line

from coordinator_api import CoordinatorConfig, EmbeddedCoordinator, SaslSettings
from coordinator_api.server._sasl import SCRAM_MECHANISMS, ScramCredential, add_user, save_users

PASSWORD = "acl-pass"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path]]:
    """A coordinator with SASL and the authorizer (super user admin), and the client properties
    of admin and of alice."""
    folder = tmp_path_factory.mktemp("cli-acls")
    users: dict[str, dict[str, ScramCredential]] = {}
    for user in ("admin", "alice"):
        add_user(users, user, PASSWORD, SCRAM_MECHANISMS)
    save_users(folder / "users.json", users)
    properties = []
    for user in ("admin", "alice"):
        path = folder / f"{user}.properties"
        path.write_text(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{user}" password="{PASSWORD}";\n'
        )
        properties.append(path)
    config = CoordinatorConfig(initial_rebalance_delay_ms=0, authorizer=True, super_users=("User:admin",))
    sasl = SaslSettings(users_file=folder / "users.json")
    with EmbeddedCoordinator(config=config, sasl=sasl, topics={"orders": 3}) as running:
        yield running.bootstrap_servers, properties[0], properties[1]


def test_acls_add_list_and_remove_as_kafka_acls_does(secured: tuple[str, Path, Path]) -> None:
    bootstrap, admin, alice = secured
    server = ("--bootstrap-server", bootstrap, "--command-config", str(admin))
    added = cli(
        "acls",
        "add",
        *server,
        "--allow-principal",
        "User:alice",
        "--operation",
        "Read",
        "--operation",
        "Describe",
        "--group",
        "orders-",
        "--resource-pattern-type",
        "prefixed",
    )
    assert (added.returncode, added.stderr) == (0, "")
    assert added.stdout.splitlines() == [
        "added ACL: GROUP orders- PREFIXED User:alice * DESCRIBE ALLOW",
        "added ACL: GROUP orders- PREFIXED User:alice * READ ALLOW",
    ]
    denied = cli(
        "acls",
        "add",
        *server,
        "--deny-principal",
        "User:alice",
        "--deny-host",
        "10.1.2.3",
        "--operation",
        "All",
        "--topic",
        "orders",
        "--json",
    )
    assert json.loads(denied.stdout) == [
        {
            "resource_type": "TOPIC",
            "resource_name": "orders",
            "pattern_type": "LITERAL",
            "principal": "User:alice",
            "host": "10.1.2.3",
            "operation": "ALL",
            "permission": "DENY",
        }
    ]
    listed = json.loads(cli("acls", "list", *server, "--json").stdout)
    assert [(a["resource_type"], a["operation"], a["permission"]) for a in listed] == [
        ("GROUP", "DESCRIBE", "ALLOW"),
        ("GROUP", "READ", "ALLOW"),
        ("TOPIC", "ALL", "DENY"),
    ]
    # match: every pattern that names group orders-eu; literal (the default): that name only.
    matched = cli(
        "acls", "list", *server, "--group", "orders-eu", "--resource-pattern-type", "match", "--json"
    )
    assert len(json.loads(matched.stdout)) == 2
    assert json.loads(cli("acls", "list", *server, "--group", "orders-eu", "--json").stdout) == []
    assert (
        cli("acls", "list", *server, "--topic", "orders").stdout
        == "TOPIC\torders\tLITERAL\tUser:alice\t10.1.2.3\tALL\tDENY\n"
    )
    # alice may neither see nor change them (CLUSTER DESCRIBE / ALTER).
    as_alice = ("--bootstrap-server", bootstrap, "--command-config", str(alice))
    assert error_line(cli("acls", "list", *as_alice)) == (
        f"coordinator-api: error: {bootstrap} answered CLUSTER_AUTHORIZATION_FAILED "
        "(Cluster authorization failed.)"
    )
    refused = cli(
        "acls", "add", *as_alice, "--allow-principal", "User:alice", "--operation", "All", "--cluster"
    )
    assert (
        error_line(refused)
        == f"coordinator-api: error: {bootstrap} refused 1 of 1 ACL(s): CLUSTER_AUTHORIZATION_FAILED"
    )
    removed = cli(
        "acls",
        "remove",
        *server,
        "--allow-principal",
        "User:alice",
        "--operation",
        "Read",
        "--group",
        "orders-",
        "--resource-pattern-type",
        "prefixed",
    )
    assert removed.stdout == "removed ACL: GROUP orders- PREFIXED User:alice * READ ALLOW\n"
    everything = cli(
        "acls",
        "remove",
        *server,
        "--group",
        "orders-",
        "--topic",
        "orders",
        "--resource-pattern-type",
        "any",
        "--json",
    )
    assert [a["operation"] for a in json.loads(everything.stdout)] == ["DESCRIBE", "ALL"]
    assert cli("acls", "list", *server).stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["add", "--allow-principal", "alice", "--operation", "Read", "--group", "g"],
            "principal 'alice' is not TYPE:NAME",
        ),
        (
            ["add", "--allow-principal", "User:a", "--operation", "Fly", "--group", "g"],
            "--operation 'Fly' is not an operation",
        ),
        (
            [
                "add",
                "--allow-principal",
                "User:a",
                "--allow-host",
                "a.example",
                "--operation",
                "Read",
                "--group",
                "g",
            ],
            "host 'a.example' is neither * nor an IP address",
        ),
        (["add", "--allow-principal", "User:a", "--operation", "Read"], "acls add needs a resource"),
        (
            ["add", "--deny-host", "10.0.0.1", "--operation", "Read", "--group", "g"],
            "--deny-host needs --deny-principal",
        ),
        (["remove", "--allow-principal", "User:a"], "acls remove needs a resource"),
        (
            ["list", "--command-config", "/nonexistent/admin.properties"],
            "cannot read --command-config /nonexistent/admin.properties",
        ),
    ],
)
def test_bad_arguments_get_one_line_and_status_2_before_any_server_is_asked(
    args: list[str], message: str
) -> None:
    line = error_line(cli("acls", args[0], "--bootstrap-server", "127.0.0.1:9", *args[1:]))
    assert line.startswith("coordinator-api: error: ") and message in line


ACL_COMMANDS = (
    ("list",),
    ("add", "--allow-principal", "User:alice", "--operation", "read", "--group", "g"),
    ("remove", "--group", "g"),
)


def test_acls_against_no_server_or_one_without_an_authorizer_say_so_in_one_line() -> None:
    started = time.monotonic()
    line = error_line(cli("acls", "list", "--bootstrap-server", "127.0.0.1:9", "--timeout-ms", "500"))
    assert time.monotonic() - started < 10
    assert line.startswith("coordinator-api: error: no answer from 127.0.0.1:9 within 500 ms")
    with EmbeddedCoordinator() as plain:
        bootstrap = plain.bootstrap_servers
        lines = [error_line(cli("acls", *args, "--bootstrap-server", bootstrap)) for args in ACL_COMMANDS]
    # Like a Kafka broker without an authorizer, it lists the ACL APIs and answers SECURITY_DISABLED.
    assert lines == [
        f"coordinator-api: error: {bootstrap} has no authorizer, so no ACLs (the embedded coordinator: "
        "serve --authorizer; a Kafka cluster: authorizer.class.name)"
    ] * len(ACL_COMMANDS)


def serve(*args: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [*CLI, "serve", "--port", "0", *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("coordinator listening on 127.0.0.1:"), line
    return process, line.rsplit(" ", 1)[1].strip()


def test_serve_turns_the_authorizer_on_from_flags_or_its_config_file(tmp_path: Path) -> None:
    config = tmp_path / "coordinator.toml"
    config.write_text('[coordinator]\nauthorizer = true\nsuper_users = ["User:ANONYMOUS"]\n')
    runs = [
        (("--authorizer",), "CLUSTER_AUTHORIZATION_FAILED"),  # nobody may: no ACL, no super user
        (("--authorizer", "--allow-everyone-if-no-acl-found"), None),  # no ACL names the cluster
        (("--authorizer", "--super-users", "User:ops;User:ANONYMOUS"), None),
        (("--config", str(config)), None),
    ]
    for flags, refusal in runs:
        process, bootstrap = serve(*flags)
        try:
            listed = cli("acls", "list", "--bootstrap-server", bootstrap)
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=10) == 0
        if refusal is None:
            assert (listed.returncode, listed.stdout, listed.stderr) == (0, "", ""), flags
        else:
            assert refusal in error_line(listed), flags


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--super-users", "admin"], "super user 'admin' is not TYPE:NAME"),
        (["--config", "BAD"], "authorizer must be true or false, got 'yes'"),
    ],
)
def test_serve_rejects_bad_authorizer_settings_in_one_line(
    args: list[str], message: str, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[coordinator]\nauthorizer = "yes"\n')
    result = cli("serve", "--port", "0", *[str(bad) if a == "BAD" else a for a in args])
    assert message in error_line(result)


def test_the_acls_examples_of_the_operations_guide_run_as_written(tmp_path: Path) -> None:
    """docs/operations.md's `acls` commands and admin properties, against a coordinator as its
    `serve` line runs it (here on a free port, users made as its `users add` lines make them)."""
    guide = (Path(__file__).resolve().parent.parent / "docs" / "operations.md").read_text()
    section = guide.split("## ACLs", 1)[1].split("\n## ", 1)[0]
    setup, commands_block = re.findall(r"```sh\n(.*?)```", section, re.DOTALL)
    assert "--authorizer --super-users 'User:admin'" in setup
    (properties,) = re.findall(r"```properties\n(.*?)```", section, re.DOTALL)
    (tmp_path / "admin.properties").write_text(properties)
    users: dict[str, dict[str, ScramCredential]] = {}
    made = re.findall(r"echo '([^']+)' \| coordinator-api users add (\w+)", setup)
    assert [user for _, user in made] == ["admin", "alice"]
    for password, user in made:
        add_user(users, user, password, SCRAM_MECHANISMS)
    save_users(tmp_path / "users.json", users)
    commands = [
        shlex.split(line) for line in commands_block.splitlines() if line and not line.startswith("#")
    ]
    assert all(argv[:2] == ["coordinator-api", "acls"] for argv in commands) and len(commands) == 6
    config = CoordinatorConfig(authorizer=True, super_users=("User:admin",))
    with EmbeddedCoordinator(config=config, sasl=SaslSettings(users_file=tmp_path / "users.json")) as running:
        printed = []
        for argv in commands:
            argv = [running.bootstrap_servers if a == "127.0.0.1:9092" else a for a in argv[1:]]
            printed.append(
                subprocess.run(
                    [*CLI, *argv], check=False, capture_output=True, text=True, timeout=30, cwd=tmp_path
                )
            )
    assert [(p.returncode, p.stderr) for p in printed] == [(0, "")] * len(commands)
    assert printed[3].stdout.splitlines() == [
        "GROUP\torders-\tPREFIXED\tUser:alice\t*\tREAD\tALLOW",
        "TOPIC\torders\tLITERAL\tUser:alice\t*\tREAD\tALLOW",
        "TOPIC\torders\tLITERAL\tUser:alice\t10.0.0.9\tALL\tDENY",
    ]
    assert [a["resource_name"] for a in json.loads(printed[4].stdout)] == ["orders-"]
    assert len(printed[5].stdout.splitlines()) == 2  # both ACLs of topic orders
