"""Least visibility: a Submitter sees the bundles and jobs they or their team submitted, on every route; what
is out of sight answers exactly like what does not exist. Staff with the broader roles still see everything."""

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.urls import reverse

from audit.models import Asset, Manifest, PagePreview
from audit.review import previews
from extraction import visibility
from extraction.intake.staging import submit_bundle
from extraction.models import Bundle, Job, Rejection
from extraction.runner import run_job
from tests import pdfs

pytestmark = pytest.mark.django_db
MISSING = 999_999  # no row has this id: the answer every out-of-sight object must give


def submitted(path, by: str) -> Job:
    with open(path, "rb") as fh:
        job_id = submit_bundle(fh, filename=path.name, submitted_by=by, case_label=f"case-of-{by}").job_id
    run_job(job_id)
    previews.generate_previews(Manifest.objects.get(job_id=job_id).pk)  # the preview worker's part
    return Job.objects.get(pk=job_id)


def person(name: str, *groups: str, perms: tuple[str, ...] = ()) -> User:
    user = User.objects.create_user(name, password="pw", is_staff=True)
    for group in groups:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    for codename in perms:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    return user


@pytest.fixture
def world(tmp_path):
    """Ann and Bob form the claims team; Cat is a Submitter in no team; the admin's file is nobody's of theirs."""
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    teams = submitted(pdfs.jpeg_rgb(tmp_path / "a"), by="bob")
    admins = submitted(pdfs.mixed(tmp_path / "b"), by="admin")
    # Given one by one, so the narrowing (not a missing permission) is what these tests see refuse.
    extra = ("download_input", "view_manifest", "view_asset")
    for name in ("ann", "bob", "cat"):
        person(name, "Submitter", *(["Claims team"] if name != "cat" else []), perms=extra)
    return {"team": teams, "admin": admins}


def objects_of(job: Job) -> dict:
    manifest = Manifest.objects.get(job=job)
    return {
        "bundle": job.bundle_id,
        "job": job.pk,
        "manifest": manifest.pk,
        "asset": Asset.objects.filter(manifest=manifest).first().pk,
        "preview": PagePreview.objects.filter(manifest=manifest).first().pk,
    }


ROUTES = [
    ("admin:extraction_bundle_change", "bundle"),
    ("admin:extraction_job_change", "job"),
    ("admin:extraction_job_state", "job"),
    ("admin:extraction_bundle_history", "bundle"),
    ("admin:extraction_job_history", "job"),
    ("admin:audit_manifest_change", "manifest"),
    ("admin:audit_asset_change", "asset"),
    ("download-input", "bundle"),
    ("download-asset", "asset"),
    ("asset-thumbnail", "asset"),
    ("page-preview", "preview"),
    ("download-manifest", "manifest"),
    ("review-manifest", "manifest"),
    ("review-previews", "manifest"),
]


def answer(response) -> tuple:
    return response.status_code, response.get("Location")


@pytest.mark.parametrize("name, kind", ROUTES, ids=[r[0] for r in ROUTES])
def test_it_answers_for_someone_elses_object_as_for_one_that_does_not_exist(client, world, name, kind):
    client.force_login(User.objects.get(username="ann"))
    theirs = client.get(reverse(name, args=[objects_of(world["admin"])[kind]]))
    assert answer(theirs) == answer(client.get(reverse(name, args=[MISSING])))
    assert theirs.status_code in (302, 404)


@pytest.mark.parametrize("name, kind", ROUTES, ids=[r[0] for r in ROUTES])
def test_it_opens_what_a_teammate_submitted(client, world, name, kind):
    client.force_login(User.objects.get(username="ann"))
    assert client.get(reverse(name, args=[objects_of(world["team"])[kind]])).status_code == 200


@pytest.mark.parametrize("name, kind", ROUTES, ids=[r[0] for r in ROUTES])
def test_a_shared_role_group_is_no_team(client, world, name, kind):
    client.force_login(User.objects.get(username="cat"))  # a Submitter, like Bob, but not in his team
    theirs = client.get(reverse(name, args=[objects_of(world["team"])[kind]]))
    assert answer(theirs) == answer(client.get(reverse(name, args=[MISSING])))


def listed(client, changelist: str) -> str:
    return client.get(reverse(changelist)).content.decode()


def test_a_submitters_lists_hold_only_their_teams_bundles_and_jobs(client, world):
    client.force_login(User.objects.get(username="ann"))
    for changelist in ("admin:extraction_bundle_changelist", "admin:extraction_job_changelist"):
        page = listed(client, changelist)
        assert "case-of-bob" in page and "case-of-admin" not in page, changelist


def test_a_submitter_in_no_team_sees_only_their_own(client, world):
    client.force_login(User.objects.get(username="cat"))
    assert "0 bundles" in listed(client, "admin:extraction_bundle_changelist")
    assert "case-of-" not in listed(client, "admin:extraction_job_changelist")


@pytest.mark.parametrize("role", ["Compliance staff", "Reviewer", "Retention admin"])
def test_staff_with_the_broader_roles_see_everything(client, world, role):
    client.force_login(person(role.lower().replace(" ", "-"), role))
    page = listed(client, "admin:extraction_job_changelist")
    assert "case-of-bob" in page and "case-of-admin" in page


def test_uploading_bytes_someone_sent_before_makes_their_bundle_yours(client, world, tmp_path):
    (tmp_path / "again").mkdir()
    with open(pdfs.mixed(tmp_path / "again"), "rb") as fh:  # the admin's bytes, once more, from Cat
        submit_bundle(fh, filename="mine.pdf", submitted_by="cat")
    cat = User.objects.get(username="cat")
    assert list(visibility.bundles(cat)) == [world["admin"].bundle]
    assert list(visibility.jobs(cat)) == [world["admin"]]


def test_a_submitter_sees_only_their_teams_rejections(client, world):
    for by in ("bob", "admin"):
        Rejection.objects.create(code="not_pdf", message="x", size=1, original_filename=f"{by}.txt", submitted_by=by)
    ann = User.objects.get(username="ann")
    assert [r.submitted_by for r in visibility.rejections(ann)] == ["bob"]
    client.force_login(ann)
    page = listed(client, "admin:extraction_rejection_changelist")
    assert "bob.txt" in page and "admin.txt" not in page


def test_a_session_opens_no_api_job(client, world):
    """The API answers service-account tokens only (each sees its own); a person's session is not one."""
    client.force_login(User.objects.get(username="ann"))
    assert client.get(f"/api/v1/jobs/{world['admin'].pk}").status_code == 401
    assert client.get(f"/api/v1/jobs/{world['team'].pk}").status_code == 401


def test_the_bundles_query_is_one_query_whatever_the_team(world, django_assert_num_queries):
    ann = User.objects.get(username="ann")
    ann = User.objects.get(pk=ann.pk)  # a fresh user: permissions not cached yet
    ann.has_perm(visibility.SEE_ALL)  # the permission cache fills once per request
    with django_assert_num_queries(1):
        assert [b.pk for b in visibility.bundles(ann)] == [world["team"].bundle_id]
    assert Bundle.objects.count() == 2
