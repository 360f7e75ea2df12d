"""Class data sharing and compiled single-file programs for the JVMs the test support starts."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest

from coordinator_api.testing._jvm import compiled, shared_classes

HELLO = """
public class Hello {
    public static void main(String[] args) {
        System.out.println("hello " + String.join(" ", args));
    }
}
"""


@pytest.fixture
def hello(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Hello.java's compiled classes, in a cache of the test's own."""
    monkeypatch.setenv("COORDINATOR_API_KAFKA_CACHE", str(tmp_path / "cache"))
    source = tmp_path / "Hello.java"
    source.write_text(HELLO)
    return compiled(source, "")


@pytest.fixture
def hello_jar(hello: Path, tmp_path: Path) -> Path:
    """The same classes in a jar: only a jar's classes can be archived."""
    jar = tmp_path / "hello.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.write(hello / "Hello.class", "Hello.class")
    return jar


def run(options: tuple[str, ...], classpath: Path) -> subprocess.CompletedProcess[str]:
    argv = ["java", *options, "-cp", str(classpath), "Hello", "world"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def test_the_first_run_records_the_archive_and_the_next_ones_map_it(hello_jar: Path) -> None:
    first = shared_classes("Hello", str(hello_jar))
    assert first.recording is not None and not first.archive.exists()
    done = run(first.options, hello_jar)
    first.ended(done.returncode)
    # What the JVM says of its archive stays out of the program's output.
    assert (done.returncode, done.stdout, done.stderr) == (0, "hello world\n", "")
    assert first.archive.is_file() and not first.recording.exists()

    second = shared_classes("Hello", str(hello_jar))
    assert second.recording is None
    assert f"-XX:SharedArchiveFile={first.archive}" in second.options
    again = run(second.options, hello_jar)
    second.ended(again.returncode)
    assert (again.returncode, again.stdout, again.stderr) == (0, "hello world\n", "")


def test_a_run_killed_by_a_signal_leaves_no_archive(hello_jar: Path) -> None:
    shared = shared_classes("Hello", str(hello_jar))
    assert shared.recording is not None
    shared.recording.write_bytes(b"half an archive")  # as a JVM killed while writing it leaves it
    shared.ended(-9)
    assert not shared.archive.exists() and not shared.recording.exists()


def test_a_classpath_with_a_directory_is_neither_recorded_nor_mapped(hello: Path) -> None:
    shared = shared_classes("Hello", str(hello))
    assert (shared.options, shared.recording) == ((), None)
    done = run(shared.options, hello)
    assert (done.returncode, done.stdout) == (0, "hello world\n")


def test_a_program_is_compiled_once_and_a_bad_one_is_refused_with_javacs_words(
    hello: Path, tmp_path: Path
) -> None:
    class_file = hello / "Hello.class"
    built = class_file.stat().st_mtime_ns
    assert compiled(tmp_path / "Hello.java", "") == hello
    assert class_file.stat().st_mtime_ns == built
    assert run((), hello).stdout == "hello world\n"

    broken = tmp_path / "Broken.java"
    broken.write_text("public class Broken { void f() { return 1; } }\n")
    with pytest.raises(RuntimeError, match="incompatible types"):
        compiled(broken, "")
    assert not any((tmp_path / "cache" / "classes").glob("Broken*"))
