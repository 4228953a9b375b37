"""The child process: limits stop it, the parent reports why and carries on.

The costly inputs here are legitimate PDFs read under deliberately small limits; each
test ends when a limit of about a second fires.
"""

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from extraction.pdf import Limits, Refusal, SandboxError, extract_images, inspect_pdf
from extraction.pdf.sandbox import PROJECT_ROOT, idle_pids, stop_idle_children, warm_up
from tests import pdfs, pdfs_intake
from tests.waiting import wait_until

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
    """16 GiB of zeros in one content stream: seconds of inflating (zlib-ng inflates zeros at about
    4 GB/s), with no size limit to stop it."""
    return pdfs.flate_bomb(tmp_path, mib=16384)


@pytest.fixture
def costly_to_extract(tmp_path):
    """A 24576 x 24576 gray image: 576 MiB of pixels and several seconds of CPU to decode and encode
    (16384 x 16384 took under 2 s once decoding got faster: too close to a 1 s budget rounded up)."""
    return pdfs.big_gray_image(tmp_path, side=24576)


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
    stop_idle_children()
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


def test_the_child_gets_none_of_the_workers_environment_and_a_larger_heap_pad(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-for-the-child")
    stop_idle_children()
    inspect_pdf(pdfs.jpeg_rgb(tmp_path))
    (pid,) = idle_pids()

    environ = dict(item.split("=", 1) for item in Path(f"/proc/{pid}/environ").read_text().split("\0") if item)

    assert "AWS_SECRET_ACCESS_KEY" not in environ and "DJANGO_SETTINGS_MODULE" not in environ
    assert environ["MALLOC_TOP_PAD_"] == str(16 * 1024 * 1024)


# ---------- the warm child: reused, replaced, never shared ----------


def test_warm_up_returns_once_the_children_have_loaded_qpdf(tmp_path):
    stop_idle_children()
    warm_up(Limits(), 2)

    pids = idle_pids()
    assert len(pids) == 2
    assert all("libqpdf" in Path(f"/proc/{pid}/maps").read_text() for pid in pids)
    inspect_pdf(pdfs.jpeg_rgb(tmp_path))  # the ready line is not taken for an answer
    assert sorted(idle_pids()) == sorted(pids)


def test_it_reads_one_pdf_after_another_in_the_same_warm_child(tmp_path):
    stop_idle_children()
    inspect_pdf(pdfs.jpeg_rgb(tmp_path))
    first = idle_pids()

    inspect_pdf(pdfs.jpeg_rgb(tmp_path))

    assert len(first) == 1
    assert idle_pids() == first


def test_it_replaces_a_child_after_child_reuse_commands(tmp_path):
    stop_idle_children()
    limits = Limits(child_reuse=2)
    seen = []
    for _ in range(3):
        inspect_pdf(pdfs.jpeg_rgb(tmp_path), limits)
        seen.append(idle_pids())

    assert seen[0] == [seen[0][0]]
    assert seen[1] == []  # its second command was its last
    assert seen[2] != seen[0]


def test_it_never_reuses_a_child_that_a_limit_stopped(slow_to_inspect, tmp_path):
    stop_idle_children()
    inspect_pdf(pdfs.jpeg_rgb(tmp_path), NO_STREAM_LIMIT)  # a cold start may take over 1 s on a busy machine
    warm = idle_pids()

    refusal(slow_to_inspect, replace(NO_STREAM_LIMIT, wall_seconds=1))

    assert idle_pids() == []
    with pytest.raises(ProcessLookupError):
        os.kill(warm[0], 0)  # killed and reaped


def test_it_gives_every_command_its_own_cpu_budget(tmp_path):
    """Five inspections of about half a second of CPU each (2 GiB of zeros to inflate) in one child
    limited to 1 s per command: 2.5 s in all, which a budget for the child's life would stop."""
    stop_idle_children()
    bomb = pdfs.flate_bomb(tmp_path, mib=2048)
    limits = replace(NO_STREAM_LIMIT, cpu_seconds=1)
    pids = []
    for _ in range(5):
        assert inspect_pdf(bomb, limits).pages == 1
        pids.append(idle_pids())

    assert len(set(map(tuple, pids))) == 1 and pids[0] != []


def test_a_forked_process_starts_its_own_child_and_leaves_the_parents_alone(tmp_path):
    stop_idle_children()
    pdf = pdfs.jpeg_rgb(tmp_path)
    inspect_pdf(pdf)
    parents = idle_pids()

    pid = os.fork()
    if pid == 0:  # django-q2 forks its workers from a process that may hold warm children
        ok = False
        try:
            ok = idle_pids() == [] and inspect_pdf(pdf).pages == 1 and idle_pids() not in ([], parents)
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)

    assert os.waitstatus_to_exitcode(status) == 0
    assert idle_pids() == parents
    assert inspect_pdf(pdf).pages == 1


def test_a_forked_process_keeps_the_files_it_opens_after_dropping_the_parents_children(tmp_path):
    from extraction.pdf import sandbox

    stop_idle_children()
    inspect_pdf(pdfs.jpeg_rgb(tmp_path))
    held = list(sandbox._pool.idle)  # a reference that outlives the fork, as a reference cycle would

    pid = os.fork()
    if pid == 0:
        ok = False
        try:
            read, write = os.pipe()  # takes the lowest free numbers: those the dropped pipes had
            held.clear()  # the parent's children are freed now, long after the fork
            os.write(write, b"x")
            ok = os.read(read, 1) == b"x"
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)

    assert os.waitstatus_to_exitcode(status) == 0


def test_a_child_whose_worker_was_killed_mid_command_stops_itself(tmp_path):
    """The worker is SIGKILLed while its child inflates 32 GiB (about ten seconds or more): the child
    must not work on for nobody until its CPU limit."""
    slow_to_inspect = pdfs.flate_bomb(tmp_path, mib=32768)
    worker = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from extraction.pdf import Limits, inspect_pdf; "
            "inspect_pdf(sys.argv[1], Limits(max_stream_bytes=2**40))",
            str(slow_to_inspect),
        ],
        cwd=PROJECT_ROOT,
    )
    try:
        child = wait_until(lambda: children_of(worker.pid), timeout=30, what="the worker started no child")[0]
        wait_until(lambda: has_open(child, slow_to_inspect), timeout=30, what="the child never opened the PDF")
    finally:
        worker.kill()
        worker.wait()

    wait_until(lambda: not alive(child), timeout=3, what="the child works on for a killed worker")


def children_of(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    """Running, and not a zombie waiting for a parent (in a container, PID 1 may never reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def has_open(pid: int, path: Path) -> bool:
    """Whether the process holds `path` open: the child is into its command."""
    try:
        return any(os.readlink(fd) == str(path.resolve()) for fd in Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False


# ---------- failures no check foresaw: a code and a sentence, never a traceback ----------


@pytest.fixture
def fresh_children():
    """The children these tests start run altered code: none of them may serve a later test."""
    stop_idle_children()
    yield
    stop_idle_children()


def test_it_refuses_with_a_code_a_file_whose_validation_raised_in_the_child(tmp_path, monkeypatch, fresh_children):
    pdfs_intake.child_where_pikepdf_open(tmp_path, monkeypatch, 'raise TypeError("no such attribute")')

    refused = refusal(pdfs.jpeg_rgb(tmp_path), Limits())

    assert refused.code == "validator_crashed"
    assert refused.message == (
        "Pagetrail's PDF validator failed on this file (TypeError: no such attribute), "
        "so the file could not be checked and was not accepted."
    )


def test_it_fails_permanently_an_extraction_that_raised_in_the_child(tmp_path, monkeypatch, fresh_children):
    pdfs_intake.child_where_pikepdf_open(tmp_path, monkeypatch, 'raise KeyError("/Foo")')
    (tmp_path / "out").mkdir()

    failed = failure(pdfs.jpeg_rgb(tmp_path), tmp_path / "out", Limits())

    assert (failed.code, failed.permanent) == ("extractor_crashed", True)
    assert "(KeyError: '/Foo')" in failed.message


def test_it_reports_a_child_that_quit_mid_command_as_not_yet_permanent(tmp_path, monkeypatch, fresh_children):
    pdfs_intake.child_where_pikepdf_open(tmp_path, monkeypatch, "os._exit(3)")  # as native code calling exit()
    (tmp_path / "out").mkdir()

    failed = failure(pdfs.jpeg_rgb(tmp_path), tmp_path / "out", Limits())

    assert (failed.code, failed.permanent) == ("child_failed", False)
    assert "stopped while reading the file (exit status 3)" in failed.message


def test_it_reports_a_warm_child_killed_below_its_limits_as_this_machines_fault(tmp_path, monkeypatch, fresh_children):
    waiting = pdfs_intake.children_that_wait_to_be_killed(tmp_path, monkeypatch)
    (waiting / "wait").rename(waiting / "not yet")
    busy = pdfs.many_objects(tmp_path)  # about a CPU second each time
    inspect_pdf(busy), inspect_pdf(busy)  # the same warm child reads both
    (waiting / "not yet").rename(waiting / "wait")

    with ThreadPoolExecutor(1) as pool:
        killed = pool.submit(pdfs_intake.kill_waiting_children, waiting, 1)
        with pytest.raises(SandboxError) as caught:
            inspect_pdf(pdfs.jpeg_rgb(tmp_path), Limits(cpu_seconds=1))

    assert killed.result()[0] > 1  # more than one command's budget in its life, next to none in this command
    assert (caught.value.code, caught.value.permanent) == ("child_killed", False)
    assert (
        "killed from outside (SIGKILL) after 0." in caught.value.message
        and "of its 1 CPU seconds" in caught.value.message
    )


def test_it_reports_a_child_that_cannot_start_as_this_machines_fault(tmp_path, monkeypatch, fresh_children):
    pdfs_intake.child_cannot_start(monkeypatch)

    with pytest.raises(SandboxError) as caught:
        inspect_pdf(pdfs.jpeg_rgb(tmp_path))

    assert (caught.value.code, caught.value.permanent) == ("child_unavailable", False)


def test_a_child_stopped_at_its_cpu_limit_is_the_files_doing_though_its_usage_shows_a_little_less():
    from extraction.pdf.exits import Usage

    limits = Limits(cpu_seconds=60, memory_bytes=2**31)
    at_the_limit = Usage(cpu_total=60.2, cpu_before=0.5, peak_bytes=2**28)  # SIGXCPU at 59.7 s of the command
    early = Usage(cpu_total=8.5, cpu_before=0.5, peak_bytes=2**28)  # an operator's kill -9 at 8 s
    assert at_the_limit.reached(limits) and not early.reached(limits)


def test_a_child_stopped_by_sigxcpu_is_at_its_cpu_limit_whatever_its_sampled_usage_shows():
    import signal

    from extraction.pdf.exits import ChildStopped, Usage, reply_of

    limits = Limits(cpu_seconds=1, memory_bytes=2**31)
    sampled_low = Usage(cpu_total=1.0, cpu_before=0.2, peak_bytes=2**27)  # as a loaded CI machine once read it
    with pytest.raises(ChildStopped) as caught:
        reply_of(-signal.SIGXCPU, sampled_low, "", limits)
    assert caught.value.code == "resource_limit"
    with pytest.raises(SandboxError) as killed:  # the same usage under an operator's kill -9: not the file's doing
        reply_of(-signal.SIGKILL, sampled_low, "", limits)
    assert killed.value.code == "child_killed"
