"""A host brings extractor versions new to the deployment only when told to (rolling upgrade)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from extraction.providers.local import EXTRACTOR_VERSION
from extraction.worker_versions import RECENT, WorkerVersions, this_host

pytestmark = pytest.mark.django_db
OLD = {"extractor_version": "3.0", "libraries": {"pikepdf": "10.18.0", "qpdf": "12.4.2"}}
NEW = {"extractor_version": "3.0", "libraries": {"pikepdf": "10.19.0", "qpdf": "12.4.2"}}


def recorded() -> dict:
    return dict(WorkerVersions.objects.values_list("host", "versions"))


def test_it_records_the_versions_of_the_first_host():
    assert WorkerVersions.check_in("a", OLD) == []
    assert recorded() == {"a": OLD}


def test_it_refuses_a_new_host_with_versions_another_host_did_not_record():
    WorkerVersions.check_in("a", OLD)

    assert WorkerVersions.check_in("b", NEW) == ["a"]
    assert recorded() == {"a": OLD}  # the refused host recorded nothing


def test_it_refuses_a_host_upgraded_in_place_beside_one_that_was_not():
    WorkerVersions.check_in("a", OLD)
    WorkerVersions.check_in("b", OLD)

    assert WorkerVersions.check_in("b", NEW) == ["a"]


def test_it_lets_a_host_with_the_same_versions_start():
    WorkerVersions.check_in("a", OLD)

    assert WorkerVersions.check_in("b", OLD) == []


def test_it_lets_a_host_bring_new_versions_when_told_to():
    WorkerVersions.check_in("a", OLD)

    assert WorkerVersions.check_in("b", NEW, allow_mixed=True) == []
    assert recorded() == {"a": OLD, "b": NEW}


def test_it_lets_an_old_host_start_again_with_its_versions_during_a_rolling_upgrade():
    WorkerVersions.check_in("a", OLD)
    WorkerVersions.check_in("b", NEW, allow_mixed=True)

    assert WorkerVersions.check_in("a", OLD) == []  # a recycled worker, a restart: nothing new


def test_it_forgets_a_host_not_seen_recently():
    at = timezone.now()
    WorkerVersions.check_in("gone", OLD, at=at - RECENT - timedelta(minutes=1))

    assert WorkerVersions.check_in("b", NEW, at=at) == []


def test_it_records_the_extractor_version_and_the_libraries_of_this_host(settings):
    settings.PAGETRAIL_PROVIDER = "local"
    versions = this_host()

    assert (versions["extractor"], versions["extractor_version"]) == ("pagetrail-pikepdf", EXTRACTOR_VERSION)
    assert {"pikepdf", "qpdf", "pillow", "pypdfium2", "pdfium", "zlib-ng"} <= versions["libraries"].keys()
