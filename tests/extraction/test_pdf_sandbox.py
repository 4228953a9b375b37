"""The child process: limits stop it, the parent reports why and carries on.

The costly inputs here are legitimate PDFs read under deliberately small limits; each
test ends when a limit of about a second fires.
"""
import os
from dataclasses import replace

import pytest

from extraction.pdf import Limits, Refusal, SandboxError, extract_images, inspect_pdf
from tests import pdfs

NO_STREAM_LIMIT = Limits(max_stream_bytes=2**40)
NO_PIXEL_LIMIT = Limits(max_pixels=2**40, max_stream_bytes=2**40)




def refusal(path, limits) -> Refusal:
    with pytest.raises(Refusal) as caught:
        inspect_pdf(path, limits)
    return caught.value


def failure(path, out_dir, limits) -> SandboxError:
    with pytest.raises(SandboxError) as caught:
        extract_images(path, out_dir, limits)
    return caught.value


@pytest.fixture
def slow_to_inspect(tmp_path):
    """2 GiB of zeros in one content stream: seconds of inflating, with no size limit to stop it."""
    return pdfs.flate_bomb(tmp_path, mib=2048)


@pytest.fixture
def costly_to_extract(tmp_path):
    """A 16384 x 16384 gray image: 256 MiB of pixels and seconds of CPU to decode and encode."""
    return pdfs.big_gray_image(tmp_path)


def test_it_refuses_as_timeout_an_inspection_that_outlasts_the_wall_clock(slow_to_inspect):
    refused = refusal(slow_to_inspect, replace(NO_STREAM_LIMIT, wall_seconds=1))

    assert refused.code == "timeout"
    assert "1 s" in refused.message


def test_it_refuses_as_resource_limit_an_inspection_over_its_cpu_time(slow_to_inspect):
    refused = refusal(slow_to_inspect, replace(NO_STREAM_LIMIT, cpu_seconds=1))

    assert refused.code == "resource_limit"
    assert "CPU time" in refused.message


def test_it_refuses_as_resource_limit_an_inspection_over_its_memory(tmp_path):
    refused = refusal(pdfs.many_objects(tmp_path), Limits(memory_bytes=128 * 1024**2))

    assert refused.code == "resource_limit"
    assert refused.message == "Reading the PDF needed more than its 128 MiB of memory."


def test_it_fails_permanently_an_extraction_over_its_memory(costly_to_extract, tmp_path):
    failed = failure(costly_to_extract, tmp_path, replace(NO_PIXEL_LIMIT, memory_bytes=200 * 1024**2))

    assert (failed.code, failed.permanent) == ("resource_limit", True)


def test_it_fails_permanently_an_extraction_over_its_cpu_time(costly_to_extract, tmp_path):
    failed = failure(costly_to_extract, tmp_path, replace(NO_PIXEL_LIMIT, cpu_seconds=1))

    assert (failed.code, failed.permanent) == ("resource_limit", True)


def test_it_fails_permanently_an_extraction_that_outlasts_the_wall_clock(costly_to_extract, tmp_path):
    failed = failure(costly_to_extract, tmp_path, replace(NO_PIXEL_LIMIT, wall_seconds=1))

    assert (failed.code, failed.permanent) == ("timeout", True)


def test_it_leaves_no_zombie_after_killing_a_child(slow_to_inspect):
    refusal(slow_to_inspect, replace(NO_STREAM_LIMIT, wall_seconds=1))

    with pytest.raises(ChildProcessError):  # no child left to reap: it was killed and reaped
        os.waitpid(-1, os.WNOHANG)


def test_it_keeps_working_after_a_child_was_killed(slow_to_inspect, tmp_path):
    refusal(slow_to_inspect, replace(NO_STREAM_LIMIT, cpu_seconds=1))

    assert inspect_pdf(pdfs.jpeg_rgb(tmp_path)).pages == 1


def test_it_removes_partial_files_after_a_killed_extraction(costly_to_extract, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / ".0123abcd.png.partial").write_bytes(b"half an image")  # as a killed child leaves it

    failure(costly_to_extract, out, replace(NO_PIXEL_LIMIT, wall_seconds=1))

    assert list(out.iterdir()) == []


def test_it_runs_the_child_from_the_project_whatever_the_working_directory(tmp_path, monkeypatch):
    pdfs.jpeg_rgb(tmp_path)
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)

    assert extract_images("jpeg_rgb.pdf", "out").pages == 1
    assert len(list((tmp_path / "out").iterdir())) == 1
