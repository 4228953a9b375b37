"""Page previews: rendered in the limited child by the worker, shown on the review page, kept like outputs."""

import hashlib
import io
import json
import os
from dataclasses import replace
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.signing import SignedPackage
from pikepdf import Array, Dictionary, Name
from PIL import Image
from playwright.sync_api import expect

from audit import tasks
from audit.models import ActivityEvent, Asset, Manifest, PagePreview
from audit.retention import enforcement as retention
from audit.review import previews
from audit.review.chunks import CHUNK
from audit.verification.verify import verify_all
from core import stores
from extraction.models import Bundle
from extraction.pdf import Limits, SandboxError, render_pages
from tests import pdfs
from tests.conftest import PRODUCTION, approved_policy, complete, read_stored, stored_names, temp_files, write_stored
from tests.procs import Portal
from tests.test_browser import CHROMIUM, browser, log_in, user  # noqa: F401 (browser is a fixture)

pytestmark = pytest.mark.django_db


def previewed(path) -> Manifest:
    manifest = complete(path)
    assert "error" not in tasks.generate_previews(manifest.pk)
    return manifest


def costly_to_render(directory, steps=5000):
    """A page-sized shading whose PostScript function runs `steps` square roots for every pixel:
    a tenth of a second to inspect and extract, over a minute of CPU to render at 1000 px."""
    doc = pdfs.Doc()
    function = doc.pdf.make_stream(b"{ add " + b"dup mul sqrt " * steps + b"2 div }")
    function.FunctionType, function.Domain, function.Range = 4, Array([0, 1, 0, 1]), Array([0, 1])
    shading = Dictionary(
        ShadingType=1,
        ColorSpace=Name.DeviceGray,
        Domain=Array([0, 1, 0, 1]),
        Matrix=Array([200, 0, 0, 200, 0, 0]),
        Function=function,
    )
    doc.page(content=b"/Sh0 sh", resources=Dictionary(Shading=Dictionary(Sh0=shading)))
    return doc.save(directory / "costly_to_render.pdf")


# ---------- rendering, in the child ----------
def test_it_renders_every_page_at_every_width(tmp_path):
    rendering = render_pages(pdfs.reused_on_three_pages(tmp_path), tmp_path, widths=(200, 1000))
    assert rendering.pages == 3
    assert [(i.number, i.max_width, i.width, i.height) for i in rendering.images] == [
        (n, w, w, w) for n in (1, 2, 3) for w in (200, 1000)
    ]  # the factory's pages are square
    for image in rendering.images:
        data = (tmp_path / image.filename).read_bytes()
        assert (hashlib.sha256(data).hexdigest(), len(data)) == (image.sha256, image.size)
        assert Image.open(io.BytesIO(data)).size == (image.width, image.height)


def test_it_renders_the_same_bytes_every_time(tmp_path):
    path = pdfs.mixed(tmp_path)
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    assert render_pages(path, first, widths=(200, 1000)) == render_pages(path, second, widths=(200, 1000))
    assert {f.name: f.read_bytes() for f in first.iterdir()} == {f.name: f.read_bytes() for f in second.iterdir()}


def test_it_fits_a_tall_page_into_four_widths_of_height(tmp_path):
    doc = pdfs.Doc()
    doc.pdf.add_blank_page(page_size=(100, 1000))
    [image] = render_pages(doc.save(tmp_path / "receipt.pdf"), tmp_path).images
    assert (image.width, image.height) == (80, 800)


def test_it_renders_only_the_pages_asked_for(tmp_path):
    rendering = render_pages(pdfs.bundle(tmp_path), tmp_path, first=239, last=999)
    assert rendering.pages == 240 and [i.number for i in rendering.images] == [239, 240]


def test_a_page_too_costly_to_render_stops_the_child_and_leaves_no_partial_file(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(SandboxError) as caught:
        render_pages(costly_to_render(tmp_path), out, replace(Limits(), cpu_seconds=1), widths=(200, 1000))
    assert (caught.value.code, caught.value.permanent) == ("resource_limit", True)
    assert list(out.iterdir()) == []


# ---------- generation, in the worker ----------
def test_it_stores_a_thumbnail_and_a_large_view_of_each_of_three_pages(tmp_path):
    manifest = previewed(pdfs.reused_on_three_pages(tmp_path))
    rows = list(manifest.previews.order_by("page", "max_width"))
    assert [(p.page, p.max_width, p.width, p.height) for p in rows] == [
        (n, w, w, w) for n in (1, 2, 3) for w in (200, 1000)
    ]
    prefix = manifest.assets.get().name.rsplit("/", 1)[0]
    assert rows[0].storage_name == f"{prefix}/previews/p00001-w200.png"
    for row in rows:
        data = read_stored("outputs", row.storage_name)
        assert (hashlib.sha256(data).hexdigest(), len(data)) == (row.sha256, row.size)
        assert Image.open(io.BytesIO(data)).size == (row.width, row.height)
    assert temp_files() == []


@pytest.mark.slow  # renders 240 pages
def test_it_previews_all_240_pages_of_a_bundle(tmp_path):
    manifest = previewed(pdfs.bundle(tmp_path))
    sizes = {(p.max_width, p.width, p.height) for p in manifest.previews.all()}
    assert manifest.previews.count() == 480 and sizes == {(200, 200, 200), (1000, 1000, 1000)}
    assert sorted(set(manifest.previews.values_list("page", flat=True))) == list(range(1, 241))


def test_it_does_nothing_the_second_time(tmp_path):
    manifest, before = previewed(pdfs.reused_on_three_pages(tmp_path)), stored_names("outputs")
    assert tasks.generate_previews(manifest.pk) == {"rendered": 0}
    assert stored_names("outputs") == before and manifest.previews.count() == 6


def test_a_task_redelivered_after_a_crash_finds_the_same_bytes_and_writes_the_rows(tmp_path):
    manifest = previewed(pdfs.mixed(tmp_path))
    files = {name: read_stored("outputs", name) for name in stored_names("outputs") if "/previews/" in name}
    rows = set(manifest.previews.values_list("storage_name", "sha256"))
    PagePreview.objects.filter(manifest=manifest).delete()  # as if the worker died between files and rows
    assert tasks.generate_previews(manifest.pk) == {"rendered": 10}  # identical bytes: no conflict
    assert set(manifest.previews.values_list("storage_name", "sha256")) == rows and len(files) == 10
    assert {name: read_stored("outputs", name) for name in files} == files


def test_a_pdf_too_costly_to_render_fails_the_task_cleanly_and_the_worker_carries_on(tmp_path, settings, caplog):
    hostile, good = complete(costly_to_render(tmp_path)), complete(pdfs.reused_on_three_pages(tmp_path))
    settings.PAGETRAIL_CHILD_CPU_SECONDS = 1  # the same limit as in production, lowered to end the test sooner
    assert tasks.generate_previews(hostile.pk) == {"rendered": 0, "error": "resource_limit"}
    event = ActivityEvent.objects.get(action="previews_failed")
    assert (event.object_id, event.after["code"]) == (str(hostile.pk), "resource_limit")
    assert "could not be made: resource_limit" in caplog.text
    assert not hostile.previews.exists() and temp_files() == []
    assert tasks.generate_previews(good.pk) == {"rendered": 6}


def test_it_renders_nothing_from_an_input_whose_bytes_changed(tmp_path):
    manifest = complete(pdfs.reused_on_three_pages(tmp_path))
    write_stored("inputs", manifest.job.bundle.input_name, pdfs.mixed(tmp_path).read_bytes())
    assert tasks.generate_previews(manifest.pk)["error"] == "input_changed"
    assert not manifest.previews.exists()


def test_it_skips_a_bundle_whose_input_was_deleted_under_retention(tmp_path):
    manifest = complete(pdfs.reused_on_three_pages(tmp_path))
    Bundle.objects.update(input_deleted_at=timezone.now())
    assert tasks.generate_previews(manifest.pk) == {"rendered": 0} and not manifest.previews.exists()


def test_completing_a_job_queues_its_previews_when_the_transaction_commits(
    tmp_path, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        manifest = complete(pdfs.reused_on_three_pages(tmp_path))
    assert not manifest.previews.exists()  # the request (here, the runner) renders nothing itself
    assert [(t["func"], t["args"]) for t in queued(settings.PAGETRAIL_PREVIEW_QUEUE)] == [
        ("audit.tasks.generate_previews", (manifest.pk,)),
        ("audit.tasks.find_page_hints", (manifest.pk,)),
    ]
    assert not [t for t in queued(settings.Q_CLUSTER["name"]) if "previews" in t["func"]]  # jobs never wait behind it


def queued(queue: str) -> list[dict]:
    broker, found = get_broker(queue), []
    while task := broker.dequeue():
        found += [SignedPackage.loads(payload) for _, payload in task]
    return found


def test_it_batches_pages_into_ranges_of_at_most_fifty():
    assert previews.batches([1, 2, 3]) == [(1, 3)]
    assert previews.batches(list(range(1, 121))) == [(1, 50), (51, 100), (101, 120)]
    assert previews.batches([4, 200, 201]) == [(4, 4), (200, 201)]


# ---------- the review page and the preview view ----------
def test_the_review_page_shows_each_pages_preview_lazily_beside_its_assets(admin_client, tmp_path):
    manifest = previewed(pdfs.reused_on_three_pages(tmp_path))
    page = admin_client.get(reverse("review-manifest", args=[manifest.pk])).content.decode()
    for row in manifest.previews.filter(max_width=200):
        assert f'<img loading="lazy" alt="Page {row.page}" src="{reverse("page-preview", args=[row.pk])}"' in page
    for row in manifest.previews.filter(max_width=1000):
        assert f'data-large="{reverse("page-preview", args=[row.pk])}"' in page
    assert "3 of 3 pages have a preview" in page and "<kbd>j</kbd>" in page and '<dialog id="preview-dialog"' in page


def test_the_review_page_says_when_a_page_has_no_preview_yet(admin_client, tmp_path):
    manifest = complete(pdfs.reused_on_three_pages(tmp_path))
    page = admin_client.get(reverse("review-manifest", args=[manifest.pk])).content.decode()
    assert page.count("Preview being made…") == 3 and "0 of 3 pages have a preview, more are being made" in page


@pytest.mark.slow  # renders 240 pages
def test_the_review_page_with_240_previews_costs_as_many_queries_as_with_3(admin_client, tmp_path):
    counts = []
    for manifest in (previewed(pdfs.reused_on_three_pages(tmp_path)), previewed(pdfs.bundle(tmp_path))):
        with CaptureQueriesContext(connection) as captured:
            page = admin_client.get(reverse("review-manifest", args=[manifest.pk])).content.decode()
        counts.append(len(captured))
        assert page.count('class="preview-open"') == min(manifest.page_count, CHUNK)  # the first chunk's cards
    assert counts[0] == counts[1]


def test_a_preview_is_streamed_inline_and_never_sniffed(admin_client, tmp_path):
    preview = previewed(pdfs.mixed(tmp_path)).previews.first()
    response = admin_client.get(reverse("page-preview", args=[preview.pk]))
    assert response.status_code == 200 and response.streaming
    assert (response["Content-Type"], response["X-Content-Type-Options"]) == (preview.content_type, "nosniff")
    assert response["Content-Disposition"].startswith("inline")  # for an <img>, not a download
    assert b"".join(response.streaming_content) == read_stored("outputs", preview.storage_name)


def test_the_preview_view_refuses_staff_without_the_asset_view_permission(client, tmp_path):
    url = reverse("page-preview", args=[previewed(pdfs.mixed(tmp_path)).previews.first().pk])
    assert client.get(url).status_code == 302  # anonymous: to the login page
    client.force_login(account := user("staff"))
    account.user_permissions.add(Permission.objects.get(codename="view_all_bundles"))  # not only their own work
    assert client.get(url).status_code == 403
    account.user_permissions.add(Permission.objects.get(codename="view_asset"))
    assert client.get(url).status_code == 200


# ---------- retention and verification ----------
def test_previews_are_deleted_with_the_outputs_and_counted_in_the_same_event(admin_client, tmp_path):
    manifest = previewed(pdfs.mixed(tmp_path))
    approved_policy(
        is_default=True,
        input_days=30,
        output_days=365,
        manifest_days=None,
        legal_hold=False,
        contract_owner="Claims Ltd",
        decision_note="Contract 12",
    )
    retention.apply_retention(at=timezone.now() + timedelta(days=400))
    assert stored_names("outputs") == [manifest.storage_name]
    event = manifest.retention_events.get(what="outputs")
    sizes = [*Asset.objects.values_list("size", flat=True), *manifest.previews.values_list("size", flat=True)]
    assert (event.files, event.bytes_freed) == (6 + 10, sum(sizes))
    assert verify_all()[0] == []
    assert tasks.generate_previews(manifest.pk) == {"rendered": 0}  # not made again after their window
    page = admin_client.get(reverse("review-manifest", args=[manifest.pk])).content.decode()
    assert "0 of 5 pages have a preview" in page


def test_verification_expects_previews_but_still_finds_a_stray_file_beside_them(tmp_path):
    manifest = previewed(pdfs.mixed(tmp_path))
    assert verify_all()[0] == []
    stray = manifest.previews.first().storage_name.replace("p00001", "p00099")
    stores.outputs().save(stray, io.BytesIO(b"not a preview"))
    assert [(f.kind, f.name) for f in verify_all()[0]] == [("unexpected_output", stray)]


# ---------- in a browser ----------
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not CHROMIUM and os.environ.get("CI") != "true", reason="no chromium here (make test installs it)")
def test_a_reviewer_pages_through_240_previews_by_keyboard_and_opens_them_large(browser, live_server, tmp_path):
    manifest = previewed(pdfs.bundle(tmp_path))
    user("rita", "Reviewer")
    page, fetched = log_in(browser, live_server, "rita"), []
    page.on("request", lambda request: fetched.append(request.url) if "/files/previews/" in request.url else None)
    page.goto(f"{live_server.url}/review/{manifest.pk}/")
    page.wait_for_load_state("networkidle")
    assert 0 < len(fetched) < 60  # lazy: the previews near the viewport, not 240
    for key in "jj":
        page.keyboard.press(key)
    assert page.evaluate("document.activeElement.id") == "page-2"
    page.keyboard.press("Enter")
    # Not wait_for_function: it evaluates a string in the page, which the portal's CSP (no 'unsafe-eval') refuses.
    expect(page.locator("#preview-image")).to_have_js_property("naturalWidth", 1000)
    large = manifest.previews.get(page=2, max_width=1000)
    assert page.get_attribute("#preview-image", "src") == reverse("page-preview", args=[large.pk])
    page.keyboard.press("j")
    assert page.inner_text("#preview-title") == "Page 3 of 240"
    page.keyboard.press("Escape")
    # The dialog's close event (which moves focus to the page shown last) is dispatched as a task of its own.
    expect(page.locator("#page-3")).to_be_focused()
    assert not page.evaluate("document.getElementById('preview-dialog').open")
    page.click("#page-1 .preview-open")
    assert page.inner_text("#preview-title") == "Page 1 of 240"


# ---------- with a real worker ----------
@pytest.mark.slow
@pytest.mark.skipif(PRODUCTION, reason="an embedded-profile deployment of its own")
def test_a_worker_survives_a_pdf_too_costly_to_render_and_previews_the_next_bundle(tmp_path):
    deployment = Portal(
        tmp_path / "portal", PAGETRAIL_WORKERS=1, PAGETRAIL_PREVIEW_WORKERS=1, PAGETRAIL_CHILD_CPU_SECONDS=1
    )
    try:
        deployment.manage("migrate", "--noinput")
        for path in (costly_to_render(tmp_path), pdfs.reused_on_three_pages(tmp_path)):
            deployment.manage_json("submit_bundle", "--here", path)
        deployment.start_worker()
        worker = deployment.start_worker(queue="pagetrail-previews")
        # One worker each takes tasks in order: the hostile bundle's previews come before the good one's.
        deployment.wait_for("select count(*) = 6 from audit_pagepreview")
        [(failure,)] = deployment.query("select after from audit_activityevent where action = 'previews_failed'")
        assert json.loads(failure)["code"] == "resource_limit"
        assert worker.poll() is None
    finally:
        deployment.stop()
