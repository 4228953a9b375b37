"""A cluster that lost its database or its broker opens an alert naming it, counted by /metrics; a drill on real
processes drops a running cluster's database connections and cuts its Redis, and nothing is lost."""

import json

import pytest
from django.db import OperationalError
from prometheus_client.parser import text_string_to_metric_families

from audit.models import Alert
from extraction.connection_loss import Connections
from tests import pdfs
from tests.conftest import PRODUCTION
from tests.listeners import Forwarder
from tests.test_scale import Host, scale_database, shared_env  # noqa: F401 (scale_database: a fixture)
from tests.waiting import wait_until


def opened_by_kind(client, settings) -> dict:
    settings.PAGETRAIL_METRICS_TOKEN = "scrape-me"
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-me")
    families = text_string_to_metric_families(response.content.decode())
    return {s.labels["kind"]: s.value for f in families if f.name == "pagetrail_alerts_opened" for s in f.samples}


@pytest.mark.django_db
def test_a_lost_database_is_alerted_on_the_first_beat_that_reaches_it_again(client, settings):
    seen = Connections("pagetrail@worker-1")
    assert not seen.database_answers()
    for _ in range(3):
        seen.database_failed(OperationalError("terminating connection due to administrator command"))
    assert not Alert.objects.exists()

    assert seen.database_answers() and not seen.database_answers()  # one alert per outage
    alert = Alert.objects.get()
    assert (alert.kind, alert.key, alert.status) == ("database_lost", "database-lost-pagetrail@worker-1", "open")
    assert "The pagetrail@worker-1 cluster lost its database connection" in alert.message
    assert "(3 heartbeat(s) failed)" in alert.message
    assert opened_by_kind(client, settings)["database_lost"] == 1


@pytest.mark.django_db
@pytest.mark.skipif(not PRODUCTION, reason="the embedded profile's broker is the database")
def test_a_broker_that_does_not_answer_opens_one_alert_cleared_when_it_answers_again(client, settings, monkeypatch):
    from django_q.conf import Conf

    from tests.webserver import free_port

    redis_url = Conf.REDIS
    seen = Connections("pagetrail@worker-1")
    monkeypatch.setattr(Conf, "REDIS", f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    assert [seen.check_broker(), seen.check_broker()] == [False, False]
    alert = Alert.objects.get()
    assert (alert.kind, alert.status, alert.occurrences) == ("broker_lost", "open", 1)
    assert "cannot reach its task broker" in alert.message and "(ConnectionError)" in alert.message
    assert opened_by_kind(client, settings)["broker_lost"] == 1

    monkeypatch.setattr(Conf, "REDIS", redis_url)
    assert seen.check_broker()
    assert Alert.objects.get().status == "cleared"


@pytest.mark.slow
@pytest.mark.skipif(not PRODUCTION, reason="PostgreSQL connections to drop and a Redis to cut")
def test_a_cluster_that_loses_its_database_and_its_broker_says_so_and_loses_nothing(tmp_path, scale_database):
    import psycopg
    from django.conf import settings
    from django_q.conf import Conf
    from redis.connection import parse_url

    redis_at = parse_url(Conf.REDIS)
    redis = Forwarder((redis_at.get("host", "127.0.0.1"), redis_at.get("port", 6379))).start()
    env = {**shared_env(scale_database), "PAGETRAIL_CLUSTER_SILENT_SECONDS": 2}
    host = Host(tmp_path, "host", env).portal
    host.manage("migrate", "--noinput")
    db = psycopg.connect(scale_database.replace("postgres://", "postgresql://"), autocommit=True)

    def value(sql: str, *params):
        return db.execute(sql, params).fetchone()[0]

    def submit(*factories) -> list[int]:
        paths = [factory(tmp_path) for factory in factories]
        return [r["job_id"] for r in host.manage_json("submit_bundle", "--here", *paths)]

    def completed() -> int:
        return value("select count(*) from extraction_job where status = 'completed'")

    cut = f"redis://127.0.0.1:{redis.port}/{redis_at.get('db', 0)}"
    try:
        host.start_worker(REDIS_URL=cut)
        wait_until(lambda: value("select count(*) from extraction_clusterheartbeat"), 120, "no heartbeat")
        jobs = submit(pdfs.jpeg_rgb, pdfs.mixed)
        wait_until(lambda: completed() == 2, 120, "the first jobs did not complete")

        dropped = value(
            "select count(pg_terminate_backend(pid)) from pg_stat_activity "
            "where datname = current_database() and pid <> pg_backend_pid()"
        )
        assert dropped > 0
        wait_until(lambda: value("select count(*) from audit_alert where kind = 'database_lost'"), 60, "no alert")

        redis.stop()
        wait_until(lambda: value("select count(*) from audit_alert where kind = 'broker_lost'"), 60, "no alert")
        jobs += submit(pdfs.cmyk)  # queued in Redis while the cluster cannot reach it
        redis.start()
        wait_until(lambda: value("select status from audit_alert where kind = 'broker_lost'") == "cleared", 60)
        wait_until(lambda: completed() == 3, 180, lambda: f"{completed()} of 3 jobs completed")
    finally:
        host.stop()
        redis.stop()

    [(key, message)] = db.execute("select key, message from audit_alert where kind = 'database_lost'").fetchall()
    [cluster] = db.execute("select queue || '@' || host from extraction_clusterheartbeat").fetchall()
    assert key == f"database-lost-{cluster[0]}" and f"The {cluster[0]} cluster lost its database" in message
    assert value("select count(*) from audit_manifest") == len(set(jobs)) == 3  # each job once
    verify = host.manage("verify_manifests", "--json", check=False)
    assert verify.returncode == 0 and json.loads(verify.stdout)["manifests"] == 3
    db.close()
    assert settings.DATABASES["default"]["NAME"] not in scale_database  # the drill never touched the test database
