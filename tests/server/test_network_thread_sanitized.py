"""The network thread's C under AddressSanitizer, UndefinedBehaviorSanitizer and
ThreadSanitizer.

The thread reads whatever clients send, in C, and shares its tables with the server's calls
under one mutex. This builds ``_network.c`` again with the sanitizers (aborting at the first
error), and runs the tests that drive the thread, those of test_network_thread.py and
test_bad_input.py's malformed, truncated, random-bytes and idle connections, against it, in a
pytest of their own that loads that build in place of the installed one and has the sanitizers'
runtime preloaded. A read or write out of bounds, a use after free, a double free, undefined
arithmetic, or a data race between the thread and the server's calls ends that run with the
sanitizer's report."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[2] / "coordinator_api" / "server" / "_network.c"
TESTS = Path(__file__).resolve().parent
# The inner run's plugin: the sanitized build becomes coordinator_api.server._network before
# anything imports the installed one, and the run writes down which build and runtime it has.
PLUGIN = """
import importlib.util
import os
import sys

name, path = "coordinator_api.server._network", os.environ["SANITIZED_NETWORK"]
spec = importlib.util.spec_from_file_location(name, path)
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
spec.loader.exec_module(module)

from coordinator_api.server import _server  # noqa: E402

with open("/proc/self/maps") as maps:
    mapped = maps.read()
with open(os.environ["SANITIZED_REPORT"], "w") as report:
    runtimes = ",".join(r for r in ("libasan", "libtsan") if r in mapped)
    report.write(f"{_server._network.__file__} {runtimes}")
"""


def _runtime(compiler: str, name: str) -> str | None:
    found = subprocess.run(
        [compiler, f"-print-file-name={name}"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return found if os.path.isabs(found) and os.path.exists(found) else None


@dataclass(frozen=True)
class Sanitizer:
    flags: str  # -fsanitize=...
    runtimes: tuple[str, ...]  # preloaded, in this order
    options: tuple[str, ...]  # environment variables set to the run's options
    selected: str  # the inner run's -k
    loaded: str  # a runtime the inner process must have mapped


SANITIZERS = {
    "address-undefined": Sanitizer(
        "address,undefined",
        ("libasan.so", "libubsan.so"),
        ("ASAN_OPTIONS", "UBSAN_OPTIONS"),
        # the descriptor-limit test runs a child of its own, with the installed build
        "thread and not descriptors",
        "libasan",
    ),
    "thread": Sanitizer(
        "thread",
        ("libtsan.so",),
        ("TSAN_OPTIONS",),
        # librdkafka (confluent-kafka's wheel) crashes under ThreadSanitizer on its own: a
        # Consumer made with libtsan preloaded ends in a segmentation fault, without this
        # extension too.
        "thread and not descriptors and not librdkafka",
        "libtsan",
    ),
}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", SANITIZERS)
def test_the_thread_runs_its_tests_clean_under_the_sanitizers(name: str, tmp_path: Path) -> None:
    sanitizer = SANITIZERS[name]
    compiler = shutil.which("gcc")
    assert compiler is not None, "no gcc: the sanitized builds need it (and its sanitizer runtimes)"
    runtimes = [_runtime(compiler, r) for r in sanitizer.runtimes]
    assert all(runtimes), f"gcc has no sanitizer runtimes {sanitizer.runtimes}"
    built = tmp_path / ("_network" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
    subprocess.run(
        [
            compiler,
            *("-O1", "-g", "-fno-omit-frame-pointer", f"-fsanitize={sanitizer.flags}"),
            "-fno-sanitize-recover=all",
            *("-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}"),
            *(str(SOURCE), "-o", str(built), "-lpthread"),
        ],
        check=True,
        capture_output=True,
    )
    (tmp_path / "sanitized_network.py").write_text(PLUGIN)
    logs = tmp_path / "reports"
    logs.mkdir()
    # Python's own allocations are not this test's business (it frees little at exit).
    common = f"detect_leaks=0:abort_on_error=1:halt_on_error=1:print_stacktrace=1:log_path={logs / name}"
    env = {
        **os.environ,
        "SANITIZED_NETWORK": str(built),
        "SANITIZED_REPORT": str(tmp_path / "loaded"),
        "LD_PRELOAD": " ".join(str(r) for r in runtimes),
        **{variable: common for variable in sanitizer.options},
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "sanitized_network"),
            str(TESTS / "test_network_thread.py"),
            str(TESTS / "test_bad_input.py"),
            *("-k", sanitizer.selected),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=TESTS.parent.parent,
        timeout=580,
        check=False,
    )
    reports = "".join(p.read_text(errors="replace") for p in sorted(logs.iterdir()))
    assert not reports, reports
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert (tmp_path / "loaded").read_text() == f"{built} {sanitizer.loaded}"
    # The inner run did run the thread's tests: those of both files.
    passed = next(line for line in done.stdout.splitlines() if " passed" in line)
    assert int(passed.split()[0]) >= 30, passed
