"""Class data sharing for the JVMs the test support starts: Kafka's brokers and its tools.

A short-lived JVM spends most of its run loading and verifying classes: Kafka's
``kafka-consumer-groups`` took 1.9 s (2.2 s of CPU) to list a coordinator's groups on a 2-core
machine, and 0.6 s (0.8 s) with its classes mapped from an archive an earlier run had recorded
(JDK 13's dynamic class data sharing). The first run of a program, for one ``java`` and one
classpath, records the archive as it exits (``-XX:ArchiveClassesAtExit``) into a file of its own,
which is moved into place only if that JVM ended by itself: a JVM ignores an archive of another
classpath or another JDK, but crashes on a truncated one, so no JVM may ever see one half
written. Runs after it map the archive (``-XX:SharedArchiveFile``).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Final

# Archives are a JVM's own business: what it says of them (a classpath that does not match, a
# class it cannot archive) must not reach the output of the tool it runs.
_QUIET: Final = ("-Xshare:auto", "-Xlog:cds=off", "-Xlog:cds+dynamic=off")
_SERIAL = itertools.count()  # names the files this process writes before moving them into place


def cache_root() -> Path:
    """Where the test support keeps what it fetches and records: ``$COORDINATOR_API_KAFKA_CACHE``,
    else ``coordinator-api`` in ``$XDG_CACHE_HOME`` (``~/.cache``)."""
    configured = os.environ.get("COORDINATOR_API_KAFKA_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "coordinator-api"


@dataclass(frozen=True)
class SharedClasses:
    """The JVM options of one run of a program, and what to do once it has ended."""

    options: tuple[str, ...]
    archive: Path
    recording: Path | None  # where this run records the archive, if it does

    def ended(self, returncode: int) -> None:
        """The JVM started with :attr:`options` ended with ``returncode``: keep the archive it
        recorded if it exited by itself (a negative code is a signal's: it may have been killed
        in the middle of writing it)."""
        if self.recording is None:
            return
        try:
            if returncode >= 0 and self.recording.is_file():
                os.replace(self.recording, self.archive)
        finally:
            self.recording.unlink(missing_ok=True)


def shared_classes(program: str, classpath: str, *, record: bool = True) -> SharedClasses:
    """JVM options that map ``program``'s classes from its archive for ``classpath`` (and the
    ``java`` on ``PATH``), or, where there is none yet and ``record``, record it. The caller
    must call :meth:`SharedClasses.ended` when the JVM has ended.

    No options for a classpath with a directory on it: only classes from jars can be archived (a
    JVM asked to archive a directory's fails as it exits)."""
    archive = cache_root() / "cds" / f"{program}-{_key(classpath)}.jsa"
    if any(os.path.isdir(entry) for entry in classpath.split(os.pathsep)):
        return SharedClasses((), archive, None)
    if archive.is_file():
        return SharedClasses((*_QUIET, f"-XX:SharedArchiveFile={archive}"), archive, None)
    if not record:
        return SharedClasses((), archive, None)
    archive.parent.mkdir(parents=True, exist_ok=True)
    recording = archive.with_name(f"{archive.name}.{os.getpid()}-{next(_SERIAL)}.tmp")
    return SharedClasses((*_QUIET, f"-XX:ArchiveClassesAtExit={recording}"), archive, recording)


def compiled(source: Path, classpath: str) -> Path:
    """The directory of the classes of the single-file Java program ``source``, compiled against
    ``classpath`` once (per text of the source, classpath and JDK) into the cache: a program
    launched as a source file (``java Program.java``) is compiled again at every start, 3 s of
    CPU for the tests' Java consumer.

    :raises RuntimeError: ``javac`` is missing or refused the source (its messages included).
    """
    target = cache_root() / "classes" / f"{source.stem}-{_key(classpath, source.read_bytes())}"
    if target.is_dir():
        return target
    javac = shutil.which("javac")
    if javac is None:
        raise RuntimeError(f"javac is not on PATH: install a JDK 17+ to compile {source}")
    staging = target.with_name(f"{target.name}.{os.getpid()}-{next(_SERIAL)}.tmp")
    argv = [javac, "-cp", classpath, "-d", str(staging), str(source)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise RuntimeError(f"javac refused {source}:\n{done.stdout}{done.stderr}")
    try:
        staging.rename(target)
    except OSError:  # another process compiled it first
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _key(classpath: str, *more: bytes) -> str:
    """What an archive or a compiled program depends on: the JDK (the ``java`` on ``PATH`` and
    when it was installed), the classpath and ``more``."""
    java = os.path.realpath(shutil.which("java") or "java")
    try:
        built = os.stat(java).st_mtime_ns
    except OSError:
        built = 0
    digest = hashlib.sha256(f"{java}\0{built}\0{classpath}".encode())
    for part in more:
        digest.update(b"\0" + part)
    return digest.hexdigest()[:16]
