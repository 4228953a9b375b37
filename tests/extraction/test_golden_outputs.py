"""The test corpus extracts to the bytes recorded for this EXTRACTOR_VERSION (tests/golden.py)."""

import json

from extraction.pdf import versions
from extraction.providers.local import EXTRACTOR_VERSION
from tests import golden


def recorded() -> dict:
    return json.loads(golden.GOLDEN.read_text())


def test_it_has_golden_outputs_for_this_extractor_version():
    assert recorded()["extractor_version"] == EXTRACTOR_VERSION, f"EXTRACTOR_VERSION changed: {golden.FIX}"


def test_it_writes_the_same_bytes_as_the_golden_outputs(tmp_path):
    expected, found = recorded(), golden.outputs(tmp_path)
    changed = sorted(
        name for name in expected["corpus"].keys() | found.keys() if expected["corpus"].get(name) != found.get(name)
    )
    upgraded = {
        name: (expected["written_with"].get(name), version)
        for name, version in versions.libraries().items()
        if expected["written_with"].get(name) != version
    }

    assert changed == [], (
        f"Outputs (or generated inputs) of the test corpus changed under extractor version "
        f"{EXTRACTOR_VERSION}: {changed}; libraries since the golden file: {upgraded}. {golden.FIX}."
    )
