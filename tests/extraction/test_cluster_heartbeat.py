"""A cluster or host that stopped reporting raises one alert naming it, cleared when it reports again."""

import signal
from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import Alert
from extraction.cluster_heartbeat import ClusterHeartbeat, beat, check_silent, stopped
from extraction.reconciler import reconcile
from tests.conftest import PRODUCTION
from tests.procs import Portal


@pytest.mark.django_db
def test_a_silent_cluster_opens_one_alert_naming_it_and_its_next_beat_clears_it(settings):
    start = timezone.now()
    beat("worker-2", "pagetrail-previews", 4242, started=True, at=start)
    silent = start + timedelta(seconds=settings.PAGETRAIL_CLUSTER_SILENT_SECONDS + 1)
    assert check_silent(at=start + timedelta(seconds=1)) == 0

    assert [check_silent(at=silent), reconcile(at=silent)["clusters_silent"]] == [1, 0]  # one alert per silence
    alert = Alert.objects.get()
    assert (alert.kind, alert.key, alert.status, alert.occurrences) == (
        "cluster_silent",
        "cluster-silent-pagetrail-previews@worker-2",
        "open",
        1,
    )
    assert "The pagetrail-previews cluster on worker-2 (pid 4242) has not reported since" in alert.message

    beat("worker-2", "pagetrail-previews", 4243, started=True, at=silent)
    assert Alert.objects.get().status == "cleared" and ClusterHeartbeat.objects.get().silent_since is None


@pytest.mark.django_db
def test_a_cluster_stopped_on_purpose_is_not_alerted_on(settings):
    start = timezone.now()
    beat("worker-1", "pagetrail", 17, started=True, at=start)
    stopped("worker-1", "pagetrail", at=start)
    assert check_silent(at=start + timedelta(hours=1)) == 0 and not Alert.objects.exists()


def alerts(p):
    return p.query("select key, status, occurrences from audit_alert where kind = 'cluster_silent'")


@pytest.mark.slow
@pytest.mark.skipif(PRODUCTION, reason="an embedded-profile deployment with real worker processes")
def test_a_sigkilled_cluster_is_alerted_on_by_the_other_and_cleared_when_started_again(tmp_path):
    p = Portal(tmp_path / "portal", PAGETRAIL_CLUSTER_SILENT_SECONDS=2)
    p.manage("migrate", "--noinput")
    try:
        p.start_worker()
        previews = p.start_worker(queue="pagetrail-previews")
        p.wait_for("select count(*) = 2 from extraction_clusterheartbeat")
        [(host,)] = p.query("select host from extraction_clusterheartbeat where queue = 'pagetrail-previews'")

        p.kill_worker(previews, signal.SIGKILL)  # the master and every process of it, as a host dying would

        p.wait_for("select count(*) = 1 from audit_alert where kind = 'cluster_silent'")  # raised by the jobs cluster
        [(_, opened)] = p.query("select last_seen, silent_since from extraction_clusterheartbeat where silent_since")
        p.wait_for(
            "select last_seen > datetime(?, '+3 seconds') from extraction_clusterheartbeat where queue = 'pagetrail'",
            opened,
        )
        assert alerts(p) == [(f"cluster-silent-pagetrail-previews@{host}", "open", 1)]  # the jobs cluster beat on

        p.start_worker(queue="pagetrail-previews")
        p.wait_for("select status = 'cleared' from audit_alert where kind = 'cluster_silent'")
        assert p.query("select count(*) from extraction_clusterheartbeat where silent_since is not null") == [(0,)]
    finally:
        p.stop()
