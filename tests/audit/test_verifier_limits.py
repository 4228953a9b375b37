"""Crafted packages end in one FAIL line naming the reason, never a traceback (docs/evidence.md has the table of
time and memory each takes: `python -m bench.crafted`)."""

import subprocess
import sys

import pytest

from audit.verifier import build
from tests.crafted_packages import CRAFTED


@pytest.fixture(scope="module")
def verifier(tmp_path_factory):
    path = tmp_path_factory.mktemp("verifier") / build.NAME
    path.write_bytes(build.build())
    return path


@pytest.mark.parametrize("label", list(CRAFTED))
def test_it_fails_a_crafted_package_with_a_reason(label, verifier, tmp_path):
    package = tmp_path / "crafted.zip"
    CRAFTED[label](package)
    done = subprocess.run(
        [sys.executable, "-I", str(verifier), str(package), "--trust-package-keys"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 1 and not done.stderr, done.stdout + done.stderr
    assert any(line.startswith("FAIL") for line in lines) and len(lines) < 250, done.stdout[-2000:]
    assert "Traceback" not in done.stdout
