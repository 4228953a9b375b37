"""End to end with real processes: `manage.py` commands and `qcluster` workers that we SIGKILL."""

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

from core.processes import ROOT
from tests import pdfs
from tests.conftest import PRODUCTION
from tests.procs import Portal
from tests.waiting import wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(PRODUCTION, reason="embedded-profile deployments; production has its own scale test"),
]


def noisy_bundle(directory, pages=240):
    """Flate images of noise: slow enough to encode that a worker can be killed mid-extraction."""
    rng, doc = random.Random(7), pdfs.Doc()
    for _ in range(pages):
        doc.page(pdfs.flate(doc, Image.frombytes("RGB", (160, 160), rng.randbytes(160 * 160 * 3))))
    return doc.save(directory / "noisy.pdf")


@pytest.fixture
def portal(tmp_path):
    portals = []

    def make(name="portal", **env):
        p = Portal(tmp_path / name, PAGETRAIL_CLAIM_LEASE_SECONDS=2, **env)
        p.manage("migrate", "--noinput")
        portals.append(p)
        return p

    yield make
    for p in portals:
        p.stop()


def job_state(p, job_id):
    return p.query("select status from extraction_job where id = ?", job_id)[0][0]


def asset_entries(p):
    body = json.loads(p.query("select body from audit_manifest")[0][0])
    return [(a["name"], a["sha256"], a["size"], a["placements"]) for a in body["assets"]]


def wait_for_the_lease_to_run_out(p, job_id):
    """The killed worker's claim ends on the database's clock, the one the reconciler reads (SQLite's, to the ms)."""
    p.wait_for("select claimed_until < strftime('%Y-%m-%d %H:%M:%f', 'now') from extraction_job where id = ?", job_id)


def run_to_completion(p, path):
    [submitted] = p.manage_json("submit_bundle", "--here", path)
    worker = p.start_worker()
    p.wait_for("select status = 'completed' from extraction_job where id = ?", submitted["job_id"])
    p.kill_worker(worker)
    return submitted["job_id"]


def test_it_completes_a_killed_workers_job_after_the_reconciler_with_no_duplicate_outputs(portal, tmp_path):
    p = portal()
    [submitted] = p.manage_json("submit_bundle", "--here", noisy_bundle(tmp_path))
    job_id = submitted["job_id"]
    worker = p.start_worker()
    work_dir = p.data_dir / "temp" / "jobs" / str(job_id)
    wait_until(work_dir.exists, timeout=60, what="the worker never started the job", interval=0.005)
    p.kill_worker(worker)
    assert job_state(p, job_id) == "submitted", "the worker finished before it could be killed"
    assert p.query("select count(*) from audit_manifest")[0][0] == 0

    wait_for_the_lease_to_run_out(p, job_id)
    assert json.loads(p.manage("reconcile").stdout)["woken"] == 1
    p.start_worker()
    p.wait_for("select status = 'completed' from extraction_job where id = ?", job_id)

    assert p.query("select count(*) from audit_manifest")[0][0] == 1
    outputs = [f.name for f in p.files_under("outputs") if "previews" not in f.parts and "tlog" not in f.parts]
    assert len(outputs) == 240 + 1 and len(set(outputs)) == len(outputs)
    positions = [f.name for f in p.files_under("outputs") if "positions" in f.parts]
    # the store witnesses each append once (audit/ledger/store_witness.py): migrate's records, then the one manifest
    leaves = p.query("select count(*) from audit_logleaf")[0][0]
    assert sorted(positions) == [f"{i:012d}.json" for i in range(leaves)]
    assert p.query("select count(*) from audit_logleaf where kind = 'manifest'")[0][0] == 1
    assert p.files_under("temp", "jobs") == []
    assert p.manage("verify_manifests", check=False).returncode == 0
    attempts = p.query("select kind, outcome from extraction_attempt where job_id = ? order by number", job_id)
    assert attempts.count(("submit", "ok")) == 1 and attempts[-1] == ("extract", "ok")


def test_it_writes_byte_identical_outputs_in_two_deployments(portal, tmp_path):
    first, second = portal("first"), portal("second")
    path = pdfs.mixed(tmp_path)
    run_to_completion(first, path), run_to_completion(second, path)
    assert asset_entries(first) == asset_entries(second)
    files = [
        sorted(
            (f.name, f.read_bytes())
            for f in p.files_under("outputs")
            if f.suffix != ".json" and "previews" not in f.parts
        )
        for p in (first, second)
    ]
    assert files[0] == files[1] and len(files[0]) == 6


def test_it_gives_two_racing_submit_commands_the_same_job(portal, tmp_path):
    p = portal()
    path = pdfs.bundle(tmp_path)
    command = [sys.executable, "manage.py", "submit_bundle", "--here", "--json", str(path)]
    racers = [subprocess.Popen(command, cwd=ROOT, env=p.env, stdout=subprocess.PIPE, text=True) for _ in range(3)]
    results = [json.loads(r.communicate(timeout=120)[0])[0] for r in racers]
    assert len({r["job_id"] for r in results}) == 1 and all(r["accepted"] for r in results)
    assert p.query("select count(*) from extraction_job")[0][0] == 1
    assert len(p.files_under("inputs")) == 1


def test_it_reports_jobs_as_json_with_counts_and_timings(portal, tmp_path):
    p = portal()
    job_id = run_to_completion(p, pdfs.reused_on_three_pages(tmp_path))
    [row] = p.manage_json("job_status")
    assert (row["job_id"], row["state"], row["provider"], row["pages"]) == (job_id, "completed", "local", 3)
    assert (row["assets"], row["placements"], row["error_code"]) == (1, 3, "")
    assert row["queue_wait_s"] >= 0 and row["extraction_s"] > 0


def test_a_worker_killed_between_the_providers_accept_and_our_commit_makes_no_second_provider_job(portal, tmp_path):
    from extraction.providers.simulator import Simulator

    key = "e2e-secret-key"
    with Simulator(api_key=key, profile="slow_accept", accept_delay_seconds=3) as sim:
        p = portal(PAGETRAIL_PROVIDER="infrai", INFRAI_BASE_URL=sim.url, INFRAI_API_KEY=key)
        [submitted] = p.manage_json("submit_bundle", "--here", pdfs.mixed(tmp_path))
        worker = p.start_worker()
        wait_until(lambda: sim.submissions, timeout=60, what="the worker never submitted", interval=0.01)
        p.kill_worker(worker)  # the provider has accepted; we never heard its answer
        assert sim.submissions == 1
        assert p.query("select provider_job_id from extraction_job")[0][0] == ""

        wait_for_the_lease_to_run_out(p, submitted["job_id"])
        assert json.loads(p.manage("reconcile").stdout)["woken"] == 1
        p.start_worker()
        p.wait_for("select status = 'completed' from extraction_job where id = ?", submitted["job_id"])
        assert sim.submissions == 1
        assert p.query("select provider_job_id from extraction_job")[0][0] in sim.jobs
    assert p.manage("verify_manifests", check=False).returncode == 0
    logs = "".join(f.read_text() for f in p.data_dir.glob("worker-*.log"))
    assert key not in logs and "infrai" in p.query("select provider from extraction_job")[0][0]


def test_previews_are_rendered_by_their_own_cluster_and_jobs_never_wait_behind_them(portal, tmp_path):
    p = portal()
    [first] = p.manage_json("submit_bundle", "--here", pdfs.reused_on_three_pages(tmp_path))
    p.start_worker()
    p.wait_for("select status = 'completed' from extraction_job where id = ?", first["job_id"])
    [second] = p.manage_json("submit_bundle", "--here", pdfs.jpeg_rgb(tmp_path))
    p.wait_for("select status = 'completed' from extraction_job where id = ?", second["job_id"])
    assert p.query("select count(*) from audit_pagepreview")[0][0] == 0  # queued for the other cluster

    p.start_worker(queue="pagetrail-previews")

    p.wait_for("select count(*) = 8 from audit_pagepreview")  # (3 + 1 pages) x 2 widths
    assert len([f for f in p.files_under("outputs") if "previews" in f.parts]) == 8


def test_each_worker_starts_its_pdf_child_before_its_first_job(portal):
    p = portal(PAGETRAIL_WORKERS=2)
    cluster = p.start_worker()

    wait_until(
        lambda: len(pdf_children_under(cluster.pid)) >= 2,
        timeout=60,
        what="the workers started no children",
        interval=0.1,
    )

    assert len(pdf_children_under(cluster.pid)) == 2  # one warm child per worker process, no job yet


def pdf_children_under(root: int) -> list[int]:
    parents, commands = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            commands[int(stat.parent.name)] = (stat.parent / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue

    def under(pid):
        while pid in parents and pid != root:
            pid = parents[pid]
        return pid == root

    return [pid for pid, cmd in commands.items() if b"extraction.pdf.child\0serve" in cmd and under(pid)]


def processes_in_group(group: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def test_a_cluster_whose_master_is_killed_stops_its_sentinel_and_workers(portal):
    p = portal(PAGETRAIL_WORKERS=2)
    cluster = p.start_worker()
    # Both workers are up once each has started its PDF child.
    wait_until(
        lambda: len(pdf_children_under(cluster.pid)) >= 2, timeout=60, what="the workers did not start", interval=0.1
    )
    assert len(processes_in_group(cluster.pid)) > 3  # master, sentinel, workers, children

    os.kill(cluster.pid, signal.SIGKILL)  # the master only
    cluster.wait(timeout=30)
    wait_until(
        lambda: not processes_in_group(cluster.pid),
        timeout=60,
        what=lambda: processes_in_group(cluster.pid),
        interval=0.2,
    )


def record_other_host(p, extractor_version: str) -> None:
    """Another host of the deployment, which started its workers with other versions a minute ago."""
    seen = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(time.time() - 60))
    with sqlite3.connect(p.data_dir / "pagetrail.sqlite3") as db:
        db.execute(
            "insert into extraction_workerversions (host, versions, seen_at) values (?, ?, ?)",
            ("other-host", json.dumps({"extractor_version": extractor_version}), seen),
        )


def test_a_cluster_beside_a_host_with_other_extractor_versions_refuses_to_start(portal, tmp_path):
    p = portal(PAGETRAIL_WORKERS=1)
    record_other_host(p, "2.9")
    [submitted] = p.manage_json("submit_bundle", "--here", pdfs.jpeg_rgb(tmp_path))

    cluster = p.start_worker()

    assert cluster.wait(timeout=60) == 3
    assert job_state(p, submitted["job_id"]) == "queued"
    assert "refuses to start" in (p.data_dir / "worker-0.log").read_text()
    assert p.query("select host from extraction_workerversions") == [("other-host",)]


def test_a_worker_told_to_allow_mixed_extractors_starts_and_records_its_versions(portal, tmp_path):
    p = portal(PAGETRAIL_WORKERS=1, PAGETRAIL_ALLOW_MIXED_EXTRACTORS="true")
    record_other_host(p, "2.9")
    [submitted] = p.manage_json("submit_bundle", "--here", pdfs.jpeg_rgb(tmp_path))

    p.start_worker()

    p.wait_for("select status = 'completed' from extraction_job where id = ?", submitted["job_id"])
    assert p.query("select count(*) from extraction_workerversions")[0][0] == 2


def test_the_command_waits_for_a_real_intake_workers_decisions(portal, tmp_path):
    p = portal()
    (tmp_path / "photo.pdf").write_bytes(pdfs.jpeg_bytes(pdfs.rgb_picture()))
    p.start_worker(queue="pagetrail-intake")
    accepted, refused = p.manage_json(
        "submit_bundle", "--timeout", 120, pdfs.jpeg_rgb(tmp_path), tmp_path / "photo.pdf"
    )

    assert (accepted["accepted"], refused["error_code"]) == (True, "not_pdf")
    assert p.query("select state from extraction_intake_submission order by id") == [("accepted",), ("refused",)]
    assert job_state(p, accepted["job_id"]) == "queued"  # validated on its own queue; no jobs worker ran
    assert p.files_under("temp", "uploads") == []
