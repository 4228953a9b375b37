"""Cluster names derived from PAGETRAIL_QUEUE_NAME: PAGETRAIL_CLUSTER picks the role, and a qcluster on a queue
nobody fills says so at its start."""

import os
import subprocess
import sys

import pytest

from core.processes import ROOT
from tests import pdfs
from tests.conftest import PRODUCTION
from tests.procs import Portal
from tests.waiting import wait_until


def settings_of(**env: str) -> list[str]:
    """Q_CLUSTER's queue and cluster name as a process started with `env` reads them."""
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.Q_CLUSTER['name'], s.Q_CLUSTER.get('cluster_name', '-'), s.Q_CLUSTER['workers'])"
    )
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "portal.settings", **env}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_the_previews_and_intake_clusters_are_named_from_the_queue_name():
    assert settings_of(PAGETRAIL_QUEUE_NAME="acme", PAGETRAIL_CLUSTER="previews", PAGETRAIL_PREVIEW_WORKERS="3") == [
        "acme",
        "acme-previews",
        "3",
    ]
    assert settings_of(PAGETRAIL_QUEUE_NAME="acme", PAGETRAIL_CLUSTER="intake")[:2] == ["acme", "acme-intake"]
    assert settings_of(PAGETRAIL_QUEUE_NAME="acme")[:2] == ["acme", "-"]  # jobs: the queue's own name


def test_an_unknown_cluster_role_is_refused_in_words():
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "portal.settings", "PAGETRAIL_CLUSTER": "preview"}
    code = "import django; django.setup()"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True)
    assert done.returncode != 0 and "PAGETRAIL_CLUSTER must be jobs, previews or intake, not 'preview'" in done.stderr


@pytest.mark.slow
@pytest.mark.skipif(PRODUCTION, reason="an embedded-profile deployment with real worker processes")
def test_a_renamed_deployments_intake_cluster_decides_uploads_and_one_on_the_old_name_warns(tmp_path):
    p = Portal(tmp_path / "portal", PAGETRAIL_QUEUE_NAME="acme")
    p.manage("migrate", "--noinput")
    try:
        p.start_worker(queue="pagetrail-intake")  # the worked example's name, wrong once the queue is renamed
        p.start_worker(PAGETRAIL_CLUSTER="intake")
        [decided] = p.manage_json("submit_bundle", "--timeout", "120", pdfs.jpeg_rgb(tmp_path))
        assert decided["accepted"] is True

        warned = wait_until(lambda: "enqueues to" in (log := p.worker_log(0).read_text()) and log, 60, "the warning")
        assert "WARNING" in warned and "serves the queue 'pagetrail-intake'" in warned and "acme-intake" in warned
        assert "nothing in this deployment enqueues to" not in p.worker_log(1).read_text()
    finally:
        p.stop()
