import io
import json
import zipfile

import pytest
from django.core.management import call_command
from django.urls import reverse

from audit.ledger import signing
from audit.models import Case, CaseMap, Manifest
from audit.review import cases
from extraction.intake.staging import submit_bundle
from extraction.runner import run_job
from tests import pdfs
from tests.audit.test_evidence import rewrite, verify

pytestmark = pytest.mark.django_db


@pytest.fixture
def manifest(tmp_path):
    """240 pages: a scan on each page plus a header drawn on every page."""
    with open(pdfs.bundle(tmp_path), "rb") as fh:
        run_job(submit_bundle(fh, filename="bundle.pdf", submitted_by="t").job_id)
    return Manifest.objects.get()


@pytest.mark.parametrize(
    "ranges, error",
    [
        ([("a", 1, 10), ("b", 10, 20)], "a and b overlap on page 10"),
        ([("a", 1, 241)], "not within the bundle's 1-240"),
        ([("a", 5, 4)], "not within"),
        ([("a", 1, 2), ("a", 3, 4)], "its own name"),
        ([], "at least one case"),
    ],
)
def test_it_refuses_ranges_that_overlap_or_leave_the_bundle(manifest, ranges, error):
    with pytest.raises(cases.SplitRefused, match=error):
        cases.split(manifest, ranges, "rita")
    assert not CaseMap.objects.exists()


def test_it_reads_lines_of_named_ranges():
    assert cases.parse_ranges("claim 1042: 1-12\nclaim: 1043: 13\n\n") == [
        ("claim 1042", 1, 12),
        ("claim: 1043", 13, 13),
    ]
    with pytest.raises(cases.SplitRefused, match="Line 1"):
        cases.parse_ranges("pages 1 to 12")


def test_each_case_gets_its_pages_and_the_assets_placed_on_them(manifest):
    case_map = cases.split(manifest, [("claim A", 1, 60), ("claim B", 61, 240)], "rita")
    document = json.loads(case_map.body)
    a, b = document["cases"]
    assert (a["name"], a["pages"], b["pages"]) == ("claim A", [1, 60], [61, 240])
    assert sum(len(x["placements"]) for x in a["assets"]) == 120  # a scan and the header on each of 60 pages
    header = [x for x in a["assets"] if len(x["placements"]) == 60]
    assert header and header[0]["name"] in {x["name"] for x in b["assets"]}  # a shared asset is in both


def test_a_split_is_signed_refers_to_the_manifest_by_hash_and_changes_nothing(manifest):
    before = (manifest.body, manifest.sha256, list(manifest.assets.values_list("name", "sha256")))
    case_map = cases.split(manifest, [("only", 1, 240)], "rita")
    assert case_map.manifest_sha256 == manifest.sha256
    assert signing.signature_ok(case_map.body.encode(), case_map.signature, case_map.key_id)
    manifest.refresh_from_db()
    assert (manifest.body, manifest.sha256, list(manifest.assets.values_list("name", "sha256"))) == before


def test_each_case_has_its_own_review_status(manifest):
    cases.split(manifest, [("claim A", 1, 60), ("claim B", 61, 240)], "rita")
    first = Case.objects.get(name="claim A")
    assert first.mark_reviewed("reviewed", "sam")
    assert list(Case.objects.values_list("name", "review_status")) == [("claim A", "reviewed"), ("claim B", "open")]


def test_a_reviewer_splits_from_the_review_page(admin_client, manifest):
    url = reverse("review-manifest", args=[manifest.pk])
    response = admin_client.post(url, {"cases": "claim A: 1-60\nclaim B: 61-240"})
    assert response.status_code == 302 and CaseMap.objects.get().cases.count() == 2
    response = admin_client.post(url, {"cases": "claim C: 1-300"})
    assert "not within the bundle" in response.content.decode() and CaseMap.objects.count() == 1


def test_a_case_exports_as_its_own_evidence_package_that_verifies_offline(manifest, tmp_path, settings):
    cases.split(manifest, [("claim A", 1, 60), ("claim B", 61, 240)], "rita")
    package = tmp_path / "case.zip"
    call_command("export_evidence", "--out", package, "--case", Case.objects.get(name="claim A").pk, "--with-assets")
    with zipfile.ZipFile(package) as zf:
        names, index = zf.namelist(), json.loads(zf.read("index.json"))
    assert sum(n.startswith("assets/") for n in names) == 59 + 1  # 60 scans, one a repeat, and the header
    assert index["case_map"]["case"] == "claim A" and any(n.startswith("cases/case-map-") for n in names)
    done = verify(package, f"--key-id={settings.PAGETRAIL_MANIFEST_KEY_ID}", f"--key={settings.PAGETRAIL_MANIFEST_KEY}")
    assert done.returncode == 0, done.stdout
    assert "PASS" in done.stdout and "outside this case's pages" in done.stdout


def test_a_tampered_case_map_in_a_case_package_fails_offline(manifest, tmp_path):
    cases.split(manifest, [("claim A", 1, 60)], "rita")
    package = tmp_path / "case.zip"
    call_command("export_evidence", "--out", package, "--case", Case.objects.get().pk)

    def rename_the_case(members):
        name = next(n for n in members if n.startswith("cases/"))
        members[name] = members[name].replace(b'"claim A"', b'"claim Z"')

    done = verify(rewrite(package, rename_the_case))
    assert done.returncode == 1 and "record's bytes do not match" in done.stdout


def test_an_admin_exports_a_case_package_from_the_cases_list(admin_client, manifest):
    cases.split(manifest, [("claim A", 1, 60)], "rita")
    response = admin_client.post(
        reverse("admin:audit_case_changelist"),
        {"action": "export_case_evidence_action", "_selected_action": [Case.objects.get().pk]},
    )
    assert response.status_code == 200 and response["Content-Disposition"].startswith("attachment;")
    with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as zf:
        assert json.loads(zf.read("index.json"))["case_map"]["case"] == "claim A"


def test_the_cases_list_costs_the_same_queries_for_few_and_many_cases(admin_client, manifest):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    counts = []
    for ranges in ([("a", 1, 10)], [(f"c{n}", 10 * n + 1, 10 * n + 10) for n in range(20)]):
        cases.split(manifest, ranges, "rita")
        with CaptureQueriesContext(connection) as captured:
            assert admin_client.get(reverse("admin:audit_case_changelist")).status_code == 200
        counts.append(len(captured))
    assert counts[0] == counts[1]
