"""Every shell block of the documentation (``docs/*.md`` and ``README.md``) runs as written, or
its page says why it cannot.

A shell block is a fenced block of language ``sh``, ``bash``, ``shell`` or ``console``, known by
its page and the start of its first line. Each one is

* run here, by ``sh -e`` in a temporary directory with this venv's ``bin`` first on ``PATH``:
  :data:`RUN_HERE` lists the blocks each test of this module runs;
* run by another test of the suite: :data:`RUN_ELSEWHERE` names it, and says why there; or
* marked in its page with ``<!-- not run: REASON -->`` on the line before it, for a block that
  no test can run on one machine (one that needs a remote Kafka cluster, say).

``test_every_shell_block_is_run_or_marked`` fails for a block that is none of these, so a block
added to a page comes with the test that runs it, or with its reason.

"As written" allows three things, each for a reason:

* a ``coordinator-api serve`` line runs in the background (it runs until stopped): the lines
  after it run once it prints ``coordinator listening on``, and it is stopped with SIGTERM, as
  the page says it stops, and must exit with status 0, when the test is done with it;
* it listens on free ports (``--port 0``, or port 0 in each of ``--listeners``) instead of the
  page's 9092, 9093 or 9094, which this machine may have taken (a Kafka broker, another run of
  the suite): the page's addresses, ``127.0.0.1:9092``, stand for the served ones in the blocks
  run while it serves;
* a ``pip install`` line is not run: the suite runs inside its installed venv and installs no
  package; the test installs what the line names as pip would (``tests/plugins/plugin_sites.py``).
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import textwrap
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, TracebackType

import pytest
import trustme
from coordinator_consumer import ConsumerGroupMember

from coordinator_api.server._sasl import SCRAM_MECHANISMS, ScramCredential, add_user, save_users

ROOT = Path(__file__).resolve().parent.parent
PAGES = (*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md")
SHELL_LANGUAGES = frozenset({"sh", "bash", "shell", "console"})
BIN = Path(sys.executable).parent  # this venv's bin, where coordinator-api is

#: test of this module -> the blocks it runs, as (page, start of the block's first line)
RUN_HERE: dict[str, tuple[tuple[str, str], ...]] = {
    "test_serve_groups_topics_and_data_check_of_the_coordinator_guide": (
        ("docs/coordinator.md", "coordinator-api serve --port 9092 --topic events:12 --data-dir"),
        ("README.md", "coordinator-api serve --port 9092 --topic events:12 --data-dir"),
        ("docs/coordinator.md", "coordinator-api groups --bootstrap-server 127.0.0.1:9092"),
        ("docs/coordinator.md", "coordinator-api topics list --bootstrap-server 127.0.0.1:9092"),
        ("docs/coordinator.md", "coordinator-api data check ./coordinator-data"),
    ),
    "test_serve_over_tls_requiring_client_certificates": (
        ("docs/coordinator.md", "coordinator-api serve --port 9093 --ssl-certfile server.pem"),
    ),
    "test_serve_on_two_listeners": (
        ("docs/coordinator.md", "coordinator-api serve --listeners INTERNAL://127.0.0.1:9092,"),
    ),
    "test_users_and_serve_with_sasl": (
        ("docs/coordinator.md", "echo 'alice-password' | coordinator-api users add alice"),
    ),
    "test_serve_with_the_authorizer_and_list_its_acls": (
        ("docs/operations.md", "echo 'admin-secret' | coordinator-api users add admin"),
        ("docs/coordinator.md", "coordinator-api acls list --bootstrap-server 127.0.0.1:9092"),
    ),
    "test_the_installed_plugin_commands": (
        ("docs/plugins.md", "coordinator-api roundrobin-plan "),
        ("docs/plugins.md", "pip install ./contrib/coordinator-roundrobin-plugin"),
        ("docs/plugins.md", "COORDINATOR_API_DISABLE_PLUGINS=roundrobin,copycat coordinator-api plugins"),
    ),
}

_SUITE = "it runs part of this suite: the test collects what it selects"
_GUIDE = "each command, against a coordinator as the page's serve line runs it, its output checked"

#: (page, start of the block's first line) -> ("tests/FILE.py::TEST" that runs it, why there)
RUN_ELSEWHERE: dict[tuple[str, str], tuple[str, str]] = {
    ("README.md", "python3 -m venv .venv && .venv/bin/pip install -q -e . &&"): (
        "tests/test_readme.py::test_readme_first_command_runs_the_demo",
        "it makes a venv and installs into it; its last command, the demo, runs in tests/test_demo.py",
    ),
    ("README.md", "python3 -m venv .venv && .venv/bin/pip install -q -e '.[dev,spark]' &&"): (
        "tests/test_readme.py::test_ci_runs_the_readme_test_command",
        "it makes a venv and runs the whole suite: CI runs it (.ci/run), which the test checks",
    ),
    ("docs/coordinator.md", "coordinator-api groups reset-offsets my-group"): (
        "tests/test_cli.py::test_the_groups_examples_of_the_guide_run_as_written",
        _GUIDE,
    ),
    ("docs/operations.md", "# alice may join, heartbeat and commit in every group"): (
        "tests/test_cli_acls.py::test_the_acls_examples_of_the_operations_guide_run_as_written",
        _GUIDE,
    ),
    ("docs/operations.md", "kafka-configs.sh --bootstrap-server 127.0.0.1:9092 --alter"): (
        "tests/server/test_quotas.py::test_kafka_configs_sets_and_describes_quotas_as_the_operations_guide_shows",
        "it runs Kafka's own kafka-configs (the suite's Kafka release) against a coordinator",
    ),
    ("docs/incremental.md", "kafka-configs.sh --bootstrap-server 127.0.0.1:9092 --alter"): (
        "tests/server/test_group_configs.py::test_kafka_configs_sets_and_describes_a_groups_session_as_the_guide_shows",
        "it runs Kafka's own kafka-configs (the suite's Kafka release) against a coordinator",
    ),
    ("docs/testing.md", ".venv/bin/pytest -q tests/membership"): (
        "tests/test_docs.py::test_testing_guide_commands_select_tests",
        _SUITE,
    ),
    ("docs/testing.md", ".venv/bin/pytest -q tests/server/test_state.py"): (
        "tests/test_docs.py::test_testing_guide_commands_select_tests",
        _SUITE,
    ),
    ("docs/testing.md", ".venv/bin/pytest -q -m kafka_python"): (
        "tests/test_docs.py::test_testing_guide_commands_select_tests",
        _SUITE,
    ),
}

_FENCE = re.compile(r"^ *```(?P<language>[^`\s]*)\s*$")
_NOT_RUN = re.compile(r"^\s*<!-- not run: (?P<reason>.*?) -->\s*$")


@dataclass(frozen=True)
class Block:
    """A fenced block of a page."""

    page: str  # relative to the repository's root
    line: int  # of its opening fence, from 1
    language: str
    text: str  # without the fences and the fences' indentation
    not_run: str | None  # the REASON of a <!-- not run: REASON --> on the line before it
    followed_by: str | None  # the text of an output block (no language) right after it

    @property
    def first_line(self) -> str:
        return next((line.strip() for line in self.text.splitlines() if line.strip()), "")

    def known_by(self, page: str, start: str) -> bool:
        return self.page == page and self.first_line.startswith(start)


def fenced_blocks(page: str, markdown: str) -> list[Block]:
    """Every fenced block of ``markdown``, the text of ``page``, in order."""
    lines = markdown.splitlines()
    spans: list[tuple[int, int, str, str | None]] = []  # opening, closing, language, reason
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        closing = index + 1
        while closing < len(lines) and lines[closing].strip() != "```":
            closing += 1
        before = next((line for line in reversed(lines[:index]) if line.strip()), "")
        marker = _NOT_RUN.match(before)
        spans.append((index, closing, opening["language"], marker["reason"] if marker else None))
        index = closing + 1
    texts = [textwrap.dedent("".join(f"{line}\n" for line in lines[a + 1 : b])) for a, b, _, _ in spans]
    blocks = []
    for position, (opening_at, closing_at, language, reason) in enumerate(spans):
        output = None
        if position + 1 < len(spans):
            following = spans[position + 1]
            adjacent = not any(line.strip() for line in lines[closing_at + 1 : following[0]])
            output = texts[position + 1] if adjacent and not following[2] else None
        blocks.append(Block(page, opening_at + 1, language, texts[position], reason, output))
    return blocks


def shell_blocks() -> list[Block]:
    """The shell blocks of every page."""
    return [
        found
        for path in PAGES
        for found in fenced_blocks(str(path.relative_to(ROOT)), path.read_text())
        if found.language in SHELL_LANGUAGES
    ]


def the_block(page: str, start: str, blocks: Sequence[Block]) -> Block:
    """The one block of ``blocks`` known by ``page`` and ``start``."""
    found = [b for b in blocks if b.known_by(page, start)]
    assert len(found) == 1, f"{len(found)} shell blocks of {page} start with {start!r}"
    return found[0]


@pytest.fixture
def blocks(request: pytest.FixtureRequest) -> tuple[Block, ...]:
    """The blocks :data:`RUN_HERE` lists for the test, in that order."""
    every = shell_blocks()
    return tuple(the_block(page, start, every) for page, start in RUN_HERE[request.node.name])


def matches(expected: str, printed: str) -> bool:
    """Whether ``printed`` is ``expected``, in which a line of ``...`` alone (indented or not)
    stands for any lines."""
    pattern = "".join(
        r"(?:.*\n)*?" if line.strip() == "..." else re.escape(line) + r"\n" for line in expected.splitlines()
    )
    return re.fullmatch(pattern, printed) is not None


# --- the inventory ------------------------------------------------------------------------------


def test_every_shell_block_is_run_or_marked() -> None:
    every = shell_blocks()
    keys = [*(key for keys in RUN_HERE.values() for key in keys), *RUN_ELSEWHERE]
    for page, start in keys:  # each names one block, which is run or marked, not both
        assert the_block(page, start, every).not_run is None, f"{page}: {start!r} is run, and marked"
    unclaimed = [
        f"{b.page}:{b.line}: {b.first_line}"
        for b in every
        if b.not_run is None and not any(b.known_by(page, start) for page, start in keys)
    ]
    assert not unclaimed, (
        "shell blocks that no test runs: run each in tests/test_docs_shell.py (RUN_HERE), name the "
        "test that runs it (RUN_ELSEWHERE), or put <!-- not run: REASON --> on the line before it:\n"
        + "\n".join(unclaimed)
    )
    assert all(b.not_run.strip() for b in every if b.not_run is not None), "a marker without a reason"
    assert len(set(keys)) == len(keys), "a block is listed twice"
    for test in RUN_HERE:
        assert callable(globals().get(test)), f"RUN_HERE lists {test}, which is not a test of this module"
    for (page, _), (test, why) in RUN_ELSEWHERE.items():
        path, name = test.split("::")
        source = (ROOT / path).read_text()
        assert f"def {name}(" in source, f"{test} does not exist"
        assert Path(page).name in source and why, f"{test} does not read {page}"


def test_markers_and_output_blocks_are_read_from_the_page() -> None:
    page = textwrap.dedent(
        """\
        Run it:

        <!-- not run: needs a Kafka cluster -->
        ```sh
        coordinator-api groups --bootstrap-server kafka-1:9092
        ```

        * in a list:

          ```bash

          coordinator-api plugins
          ```

          ```
          plugins (entry-point group 'coordinator_api'):
          ```
        """
    )
    marked, listed, output = fenced_blocks("docs/example.md", page)
    assert (marked.line, marked.language, marked.not_run) == (4, "sh", "needs a Kafka cluster")
    assert marked.known_by("docs/example.md", "coordinator-api groups --bootstrap")
    assert not marked.known_by("docs/other.md", "coordinator-api groups --bootstrap")
    assert marked.followed_by is None
    assert (listed.first_line, listed.language, listed.not_run) == ("coordinator-api plugins", "bash", None)
    assert listed.followed_by == output.text == "plugins (entry-point group 'coordinator_api'):\n"
    assert matches("a\n  ...\nd\n", "a\nb\nc\nd\n") and matches("a\n...\nb\n", "a\nb\n")
    assert not matches("a\n...\nd\n", "a\nb\n") and not matches("a\n", "a\nb\n")


# --- running blocks -----------------------------------------------------------------------------


@dataclass
class Shell:
    """Runs blocks as a user would, one after the other, in one directory: each by ``sh -e``
    with this venv's bin first on ``PATH``, a ``coordinator-api serve`` line in the background
    (see the module's docstring)."""

    cwd: Path
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    server: subprocess.Popen[bytes] | None = None
    served: dict[str, str] = field(default_factory=dict)  # the page's address -> the served one

    def __post_init__(self) -> None:
        assert (BIN / "coordinator-api").exists(), BIN
        self.env = {**self.env, "PATH": f"{BIN}{os.pathsep}{self.env.get('PATH', '')}"}

    def __enter__(self) -> Shell:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self.server is None:
            return
        if kind is None:
            self.stop_server()
        else:  # the test failed already: just make sure nothing is left running
            self.server.kill()
            self.server.wait(10)

    def run(self, text: str) -> str:
        """Run a block; return what its commands (not its server) printed."""
        lines = text.replace("\\\n", "").splitlines()  # a line ending in \ goes on on the next
        serving = [i for i, line in enumerate(lines) if line.startswith("coordinator-api serve ")]
        if not serving:
            return self._sh(lines)
        (at,) = serving
        printed = self._sh(lines[:at])
        self._serve(lines[at])
        return printed + self._sh(lines[at + 1 :])

    def _sh(self, lines: list[str]) -> str:
        script = "\n".join(lines)
        for page_address, address in self.served.items():
            script = script.replace(page_address, address)
        if not script.strip():
            return ""
        done = subprocess.run(
            ["sh", "-e", "-c", script],
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, f"{script}\nexit status {done.returncode}\n{done.stdout}{done.stderr}"
        return done.stdout

    def _serve(self, line: str) -> None:
        assert self.server is None, "one server at a time"
        listeners = re.search(r"--listeners (\S+)", line)
        if listeners:
            page_addresses = re.findall(r"://([^,\s]+)", listeners[1])
            free = re.sub(r"(://[^,\s]*):\d+(?=,|$)", r"\1:0", listeners[1])
            command = line.replace(listeners[0], f"--listeners {free}")
        else:
            port = re.search(r"--port (\d+)", line)
            page_addresses = [f"127.0.0.1:{port[1] if port else 9092}"]
            command = line.replace(port[0], "--port 0") if port else f"{line} --port 0"
        out, err = self.cwd / "serve.out", self.cwd / "serve.err"
        with out.open("wb") as stdout, err.open("wb") as stderr:
            self.server = subprocess.Popen(  # exec: SIGTERM goes to the server itself
                ["sh", "-c", f"exec {command}"],
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
            )
        deadline = time.monotonic() + 30
        # A line per listener, in the order given.
        while len(listening := self.listening()) < len(page_addresses):
            assert self.server.poll() is None, (
                f"{line}\nexit status {self.server.returncode}\n{err.read_text()}"
            )
            assert time.monotonic() < deadline, f"{line}\nnot listening after 30 s\n{err.read_text()}"
            time.sleep(0.02)
        self.served = dict(zip(page_addresses, (address for address, _ in listening), strict=True))

    def listening(self) -> list[tuple[str, str]]:
        """The server's ``coordinator listening on ADDRESS (NOTES)`` lines so far: (ADDRESS, NOTES)."""
        printed = (self.cwd / "serve.out").read_text()
        return re.findall(r"^coordinator listening on (\S+)(?: \((.*)\))?$", printed, re.MULTILINE)

    @property
    def address(self) -> str:
        """The served address, ``127.0.0.1:PORT``."""
        (address,) = self.served.values()
        return address

    def stop_server(self) -> None:
        """SIGTERM, as the page says it stops; it must exit with status 0."""
        server, self.server, self.served = self.server, None, {}
        assert server is not None
        server.send_signal(signal.SIGTERM)
        try:
            code = server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)
            raise
        assert code == 0, (self.cwd / "serve.err").read_text()


# --- the blocks run here ------------------------------------------------------------------------


def test_serve_groups_topics_and_data_check_of_the_coordinator_guide(
    blocks: tuple[Block, ...], tmp_path: Path
) -> None:
    serve, readme, groups, topics, check = blocks
    assert readme.text == serve.text  # one command, on two pages
    with Shell(tmp_path) as shell:
        shell.run(serve.text)
        # `groups my-group` describes a group with a member: a consumer of the incremental
        # protocol (no initial rebalance delay), which has committed an offset (for `data check`,
        # and because the group's offsets must not hide it from the description).
        member = ConsumerGroupMember("my-group", shell.address, topics=["events"], group_protocol="consumer")
        try:
            member.ensure_active_group(30)
            member.commit({("events", 0): 5})
            listed, described = shell.run(groups.text).split("\n", 1)
            assert listed == "my-group\tconsumer\tStable"
            assert member.member_id in described and "assigned:   events 0-11" in described, described
        finally:
            member.close()
        listed, events, created, grown, deleted = shell.run(topics.text).splitlines()
        assert listed.split("\t")[:2] == events.split("\t")[:2] == ["events", "12 partition(s)"]
        assert created == "created topic orders with 6 partition(s)"
        assert grown == "topic orders has 12 partition(s) now"
        assert deleted == "deleted topic orders"
        shell.stop_server()  # "With the coordinator stopped,"
        checked = shell.run(check.text)
    assert checked.startswith("coordinator-data/coordinator.sqlite3: 1 topic(s), "), checked  # orders deleted
    assert "1 consumer group(s), 1 committed offset(s)" in checked


def api_versions_answer(address: str, context: ssl.SSLContext | None) -> bytes:
    """The first 8 bytes (size, correlation id 1) of the answer to ApiVersions v0 from
    ``address``, over TLS with ``context``; or what came before the server closed the connection."""
    host, port = address.rsplit(":", 1)
    answer = b""
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        try:
            with context.wrap_socket(raw, server_hostname=host) if context else raw as connection:
                connection.sendall(b"\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x01\xff\xff")
                while len(answer) < 8 and (chunk := connection.recv(8 - len(answer))):
                    answer += chunk
        except (ssl.SSLError, ConnectionResetError):
            pass  # refused with an alert, or reset
    return answer


def test_serve_over_tls_requiring_client_certificates(blocks: tuple[Block, ...], tmp_path: Path) -> None:
    (serve,) = blocks
    ca = trustme.CA()  # the page's files: ca.pem, server.pem and server.key
    server = ca.issue_cert("127.0.0.1")
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    (tmp_path / "server.pem").write_bytes(b"".join(pem.bytes() for pem in server.cert_chain_pems))
    server.private_key_pem.write_to_path(str(tmp_path / "server.key"))
    client = ca.issue_cert("client@example.com", common_name="client")
    client.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "client.pem"))
    with Shell(tmp_path) as shell:
        shell.run(serve.text)
        # Answered to a client with a certificate the CA signed; one without is refused at the
        # handshake (under TLS 1.3 the client learns it at its first read).
        authenticated = ssl.create_default_context(cafile=tmp_path / "ca.pem")  # checks 127.0.0.1
        authenticated.load_cert_chain(tmp_path / "client.pem")
        assert api_versions_answer(shell.address, authenticated)[4:] == b"\x00\x00\x00\x01"
        anonymous = ssl.create_default_context(cafile=tmp_path / "ca.pem")
        assert api_versions_answer(shell.address, anonymous) == b""


def test_serve_on_two_listeners(blocks: tuple[Block, ...], tmp_path: Path) -> None:
    (serve,) = blocks
    ca = trustme.CA()  # server.pem holds its key too: the page gives no --ssl-keyfile
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "server.pem"))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    users: dict[str, dict[str, ScramCredential]] = {}
    add_user(users, "alice", "alice-password", SCRAM_MECHANISMS)
    save_users(tmp_path / "users.json", users)
    with Shell(tmp_path) as shell:
        shell.run(serve.text)
        assert [notes for _, notes in shell.listening()] == [
            "listener INTERNAL, PLAINTEXT",
            "listener EXTERNAL, SASL_SSL",
        ]
        # ApiVersions, which SASL lets through before authentication: in plaintext on INTERNAL,
        # over TLS on EXTERNAL.
        internal, external = shell.served["127.0.0.1:9092"], shell.served["127.0.0.1:9094"]
        assert api_versions_answer(internal, None)[4:] == b"\x00\x00\x00\x01"
        tls = ssl.create_default_context(cafile=tmp_path / "ca.pem")
        assert api_versions_answer(external, tls)[4:] == b"\x00\x00\x00\x01"
        assert api_versions_answer(external, None) == b""  # no answer without TLS


def test_users_and_serve_with_sasl(blocks: tuple[Block, ...], tmp_path: Path) -> None:
    (users,) = blocks
    with Shell(tmp_path) as shell:
        printed = shell.run(users.text).splitlines()
        assert shell.server is not None  # serving until the test is done
    # users add; users list, as its comment says (a tab between); then, served, users remove
    assert "users list --users-file users.json      # alice  SCRAM-SHA-256,SCRAM-SHA-512\n" in users.text
    assert printed == [
        "user alice: SCRAM-SHA-256, SCRAM-SHA-512",
        "alice\tSCRAM-SHA-256,SCRAM-SHA-512",
        "removed user alice",
    ]


def test_serve_with_the_authorizer_and_list_its_acls(blocks: tuple[Block, ...], tmp_path: Path) -> None:
    setup, listing = blocks
    # The admin's client properties, as the page gives them just before its acls commands.
    page = (ROOT / "docs" / "operations.md").read_text()
    (properties,) = [
        b.text
        for b in fenced_blocks("docs/operations.md", page.split("\n## ACLs\n", 1)[1].split("\n## ", 1)[0])
        if b.language == "properties"
    ]
    (tmp_path / "admin.properties").write_text(properties)
    with Shell(tmp_path) as shell:
        assert shell.run(setup.text).splitlines() == [
            "user admin: SCRAM-SHA-256, SCRAM-SHA-512",
            "user alice: SCRAM-SHA-256, SCRAM-SHA-512",
        ]
        assert shell.run(listing.text) == ""  # the admin, a super user, may list them: none yet
    assert (tmp_path / "coordinator-data" / "coordinator.sqlite3").is_file()


def _plugin_sites() -> ModuleType:
    """``tests/plugins/plugin_sites.py``, which installs a plugin as pip would (the plugin tests
    import it from their folder, which pytest puts on ``sys.path`` for them only)."""
    if "plugin_sites" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "plugin_sites", ROOT / "tests" / "plugins" / "plugin_sites.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["plugin_sites"] = module
        spec.loader.exec_module(module)
    return sys.modules["plugin_sites"]


def test_the_installed_plugin_commands(blocks: tuple[Block, ...], tmp_path: Path) -> None:
    plan, install, disable = blocks
    pip, *rest = install.text.splitlines()
    assert pip.split() == ["pip", "install", "./contrib/coordinator-roundrobin-plugin"]
    sites = _plugin_sites()
    site = tmp_path / "site-packages"
    sites.install_contrib_plugin(site)  # what that pip line installs, as pip would
    work = tmp_path / "work"
    work.mkdir()
    with Shell(work, sites.environment(site)) as shell:
        assert shell.run(plan.text) == "a: s0, s2\nb: s1\n"  # b takes at most one
        for shown, text in ((install, "\n".join(rest)), (disable, disable.text)):
            assert shown.followed_by is not None, f"{shown.page}:{shown.line} shows no output"
            printed = shell.run(text)
            assert matches(shown.followed_by, printed), f"{shown.page}:{shown.line} prints\n{printed}"
