"""The Content-Security-Policy: pages run only the portal's own script files, nothing inline."""

import re

import pytest
from django.urls import reverse

from audit.models import Manifest

pytestmark = pytest.mark.django_db


def script_sources(response) -> list[str]:
    policy = response.headers["Content-Security-Policy"]
    return re.search(r"script-src ([^;]*)", policy).group(1).split()


@pytest.fixture
def manifest(completed) -> Manifest:
    return completed


@pytest.mark.parametrize("page", ["admin-index", "job", "review", "verification-run"])
def test_it_allows_only_the_portals_own_scripts(admin_client, manifest, page):
    from audit.models import VerificationRun

    url = {
        "admin-index": lambda: reverse("admin:index"),
        "job": lambda: reverse("admin:extraction_job_change", args=[manifest.job_id]),
        "review": lambda: reverse("review-manifest", args=[manifest.pk]),
        "verification-run": lambda: reverse(
            "admin:audit_verificationrun_change", args=[VerificationRun.objects.create().pk]
        ),
    }[page]()
    response = admin_client.get(url)
    assert response.status_code == 200
    assert script_sources(response) == ["'self'"]


@pytest.mark.parametrize(
    "template",
    [
        "audit/review.html",
        "admin/audit/verificationrun/change_form.html",
        "audit/job_page/change_form.html",
        "admin/audit/retentionpolicy/change_form.html",
        "admin/base_site.html",
        "portal/two_factor.html",
        "portal/login.html",
    ],
)
def test_no_template_carries_an_inline_script_or_event_handler(template):
    from django.template.loader import get_template

    source = get_template(template).template.source
    assert not re.search(r"<script(?![^>]*\bsrc=)|\son[a-z]+\s*=", source)
