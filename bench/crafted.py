"""The offline verifier against crafted packages: `python -m bench.crafted` prints, for each, the verdict line,
the time it took and the verifier's peak memory (max RSS of its process). docs/evidence.md keeps the table."""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from audit.verifier import build
from tests.crafted_packages import CRAFTED


def measure(verifier: Path, package: Path) -> tuple[float, int, str]:
    """(seconds, peak RSS in MiB, the verdict and first reason) of one run in a process of its own."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-I", str(verifier), str(package), "--trust-package-keys"], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None  # stdout=PIPE
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)  # this child's own peak, not the largest of all children so far
    child.returncode, seconds = os.waitstatus_to_exitcode(status), time.perf_counter() - started
    child.stdout.close()
    lines = out.splitlines()
    verdict = next((i for i, line in enumerate(lines) if line.startswith(("FAIL", "PASS", "UNPINNED"))), None)
    said = " / ".join(line.strip() for line in lines[verdict : verdict + 2]) if verdict is not None else "(none)"
    return seconds, usage.ru_maxrss // 1024, said.replace(str(package), "PACKAGE")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        verifier = Path(tmp) / build.NAME
        verifier.write_bytes(build.build())
        print("| crafted input | zip size | time | peak RSS | verdict |")
        print("|---|---|---|---|---|")
        for label, make in CRAFTED.items():
            package = Path(tmp) / "crafted.zip"
            make(package)
            seconds, rss, said = measure(verifier, package)
            size = package.stat().st_size
            print(f"| {label} | {size / 1e6:.1f} MB | {seconds:.2f} s | {rss} MiB | `{said[:110]}` |")
            package.unlink()


if __name__ == "__main__":
    main()
