"""The benchmark's floors and peers per kind, and its inflaters: what they write and what they inflate."""

import hashlib
import time

from bench import inflaters, kinds, runners
from tests import pdfs


def outputs(tmp_path, tool, pdf):
    out = tmp_path / tool.__name__
    out.mkdir()
    return tool(pdf, out)[0]


def test_it_copies_the_stored_bytes_at_the_guarantee_floor_as_at_the_raw_copy(tmp_path):
    pdf = pdfs.rgb_with_smask(tmp_path)

    guaranteed = outputs(tmp_path, runners.guarantee_floor, pdf)

    assert len(guaranteed) == 2 and guaranteed == outputs(tmp_path, runners.raw_copy, pdf)


def test_it_has_pikepdf_write_each_placed_image_as_a_file(tmp_path):
    pdf = pdfs.flate_rgb(tmp_path)

    written = outputs(tmp_path, runners.pikepdf_images, pdf)

    files = list((tmp_path / "pikepdf_images").iterdir())
    assert [f.suffix for f in files] == [".png"] and written == [hashlib.sha256(files[0].read_bytes()).hexdigest()]


def test_every_installed_inflater_inflates_each_flate_image_whole(tmp_path):
    streams = inflaters.flate_streams([pdfs.flate_rgb(tmp_path), pdfs.flate_predictor(tmp_path)])

    measured = inflaters.measure(streams, rounds=1)

    assert len(streams) == 2 and inflaters.PRODUCT in measured
    assert {name: whole for name, (_, _, whole) in measured.items()} == dict.fromkeys(measured, True)


def test_it_times_the_floors_pagetrail_both_ways_and_pikepdf_on_every_kind():
    names = [name for name, _, _ in kinds.tools()]

    assert names[:5] == [kinds.FLOOR, kinds.GUARANTEE, kinds.PAGETRAIL, kinds.PLACEMENTS, kinds.IN_PROCESS]
    assert kinds.PIKEPDF in names


def test_the_placements_floor_writes_what_the_guarantee_floor_writes(tmp_path):
    pdf = pdfs.rgb_with_smask(tmp_path)

    assert outputs(tmp_path, runners.placements_floor, pdf) == outputs(tmp_path, runners.guarantee_floor, pdf)


def test_a_sessions_cpu_keeps_the_cpu_of_the_processes_it_reaped():
    import subprocess
    import sys

    from bench import pipeline

    burn = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import subprocess, sys, time\nsubprocess.run([sys.executable, '-c', {burn!r}])\ntime.sleep(30)",
        ],
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 20
        while runners.reaped_cpu(parent.pid) < 0.25 and time.monotonic() < deadline:
            time.sleep(0.05)  # the child burns its CPU, ends and is reaped; the parent sleeps
        assert runners.reaped_cpu(parent.pid) >= 0.25  # the child is gone: only its parent's count holds it
        assert pipeline.session_cpu(parent.pid) >= 0.25
    finally:
        parent.kill()
        parent.wait()
