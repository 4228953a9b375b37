"""`make bench`'s page-hints row: a 240-page bundle's job timed with hints asked and without, then the hints."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.report import _hint_cost_row

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent


def test_it_times_the_job_both_ways_and_the_hints_after_it(tmp_path):
    summary = tmp_path / "summary.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.hint_cost", "--rounds", "1", "--summary", str(summary)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    cost = json.loads(summary.read_text())
    assert cost["failures"] == [] and cost["pages"] == 240 and cost["hints"] == 0
    assert all(cost[f"{way}_{step}_s"] > 0 for way in ("with", "without") for step in ("extraction", "manifest"))
    row = _hint_cost_row(cost)
    assert row[0] == "page hints: a 240-page bundle's job" and row[3].endswith("× before")
