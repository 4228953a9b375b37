"""The settings are the profiles: defaults embedded, production by environment variables only."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from core.processes import ROOT
from tests.conftest import PRODUCTION

PRODUCTION_ENV = {
    "SECRET_KEY": "a-long-random-production-secret-key-0123456789abcdefghijklmnopqrstuvwxyz",
    "PAGETRAIL_MANIFEST_KEY": "another-long-random-secret",
    "ALLOWED_HOSTS": "pagetrail.example.org",
    "PAGETRAIL_HTTPS": "true",
    "PAGETRAIL_INPUT_BUCKET": "in",
    "PAGETRAIL_OUTPUT_BUCKET": "out",
    "PAGETRAIL_SIGNING_KEY": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
}


def run(tmp_path, *args, **env):
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PAGETRAIL_DATA_DIR": str(tmp_path), **env},
        timeout=120,
    )


def test_production_settings_pass_the_deploy_check_without_a_warning(tmp_path):
    done = run(tmp_path, "check", "--deploy", "--fail-level", "WARNING", **PRODUCTION_ENV)
    assert done.returncode == 0, done.stderr
    assert "no issues" in done.stdout


def test_the_embedded_defaults_would_be_flagged_by_the_deploy_check(tmp_path):
    done = run(tmp_path, "check", "--deploy", "--fail-level", "WARNING")
    assert done.returncode != 0 and "SECURE_HSTS_SECONDS" in done.stderr


def test_inputs_and_outputs_can_never_share_a_store(tmp_path):
    done = run(
        tmp_path,
        "check",
        PAGETRAIL_INPUT_BUCKET="same",
        PAGETRAIL_OUTPUT_BUCKET="same",
        PAGETRAIL_INPUT_PREFIX="p",
        PAGETRAIL_OUTPUT_PREFIX="p",
    )
    assert done.returncode != 0 and "must not share a store" in done.stderr


def test_an_unknown_time_zone_refuses_to_start(tmp_path):
    done = run(tmp_path, "check", PAGETRAIL_TIME_ZONE="Mars/Olympus_Mons")
    assert done.returncode != 0 and "PAGETRAIL_TIME_ZONE='Mars/Olympus_Mons' is not an IANA time zone" in done.stderr
    assert run(tmp_path, "check", PAGETRAIL_TIME_ZONE="Europe/Zurich").returncode == 0


def test_the_configuration_reference_documents_every_environment_variable_the_settings_read():
    root = Path(__file__).resolve().parent.parent
    settings_text = (root / "portal" / "settings.py").read_text()
    read = set(re.findall(r"""env(?:\.\w+)?\(\s*["']([A-Z][A-Z0-9_]+)["']""", settings_text))
    reference = (root / "docs" / "configuration.md").read_text()

    assert len(read) > 40 and sorted(name for name in read if f"`{name}`" not in reference) == []


def test_a_shared_deployment_refuses_to_start_without_the_secrets_every_host_must_share(tmp_path):
    unset = dict.fromkeys(("SECRET_KEY", "PAGETRAIL_SIGNING_KEY", "PAGETRAIL_ALERT_WEBHOOK_SECRET"), "")
    done = run(
        tmp_path,
        "check",
        REDIS_URL="redis://127.0.0.1:6379/15",
        PAGETRAIL_ALERT_WEBHOOK_URL="https://x.example/",
        **unset,
    )
    assert done.returncode != 0
    for name in ("SECRET_KEY", "PAGETRAIL_SIGNING_KEY", "PAGETRAIL_ALERT_WEBHOOK_SECRET"):
        assert name in done.stderr, done.stderr
    assert not (tmp_path / "secrets").exists()  # nothing generated for this host alone


def require_mfa(tmp_path, **env) -> str:
    done = run(
        tmp_path, "shell", "-c", "from django.conf import settings; print(settings.PAGETRAIL_REQUIRE_MFA)", **env
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()[-1]


def test_the_embedded_profile_needs_no_second_factor(tmp_path):
    embedded = {
        name: "" for name in ("REDIS_URL", "PAGETRAIL_INPUT_BUCKET", "PAGETRAIL_OUTPUT_BUCKET")
    }  # whatever runs us
    assert require_mfa(tmp_path, **embedded) == "False"


def test_the_production_profile_requires_a_second_factor(tmp_path):
    assert require_mfa(tmp_path, **PRODUCTION_ENV) == "True"


@pytest.mark.skipif(PRODUCTION, reason="the Redis broker blocks on its queue; it does not poll")
def test_an_idle_embedded_cluster_looks_for_work_more_often_than_django_q2s_default():
    from django.conf import settings
    from django_q.conf import Conf

    assert settings.Q_CLUSTER["orm"] == "default" and Conf.POLL == settings.Q_CLUSTER["poll"] < 0.2
