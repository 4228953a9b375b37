"""Permission-checked downloads and thumbnails of stored assets and manifests, and the review page."""

import io

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from PIL import Image

from audit.ledger import signing, store_witness
from audit.models import Asset, Manifest, PageHint, PagePreview, ReviewFlag
from audit.review import cases, chunks, page_hints, preview_requests, previews
from audit.review import flags as review
from audit.verification import state as verification_state
from core import display, stores
from extraction.visibility import through_jobs

THUMBNAIL = 240
REVIEW_PAGE_PERMISSIONS = ("audit.view_manifest", "audit.view_asset")


def signing_keys(request):
    """The public keys, current and retired, with their validity: public, so an auditor needs no account.
    Only keys the configuration holds: a row an insider inserts is not published."""
    return JsonResponse(signing.published_document(), json_dumps_params={"indent": 1})


@staff_member_required
def download_asset(request, asset_id: int):
    if not request.user.has_perm("audit.view_asset"):
        raise PermissionDenied
    asset = get_object_or_404(through_jobs(request.user, Asset.objects.all(), "manifest__job"), pk=asset_id)
    return stores.attachment(stores.outputs(), asset.name, asset.name.rsplit("/", 1)[1], asset.content_type)


@staff_member_required
def download_manifest(request, manifest_id: int):
    if not request.user.has_perm("audit.view_manifest"):
        raise PermissionDenied
    manifest = get_object_or_404(through_jobs(request.user, Manifest.objects.all()), pk=manifest_id)
    return stores.attachment(
        stores.outputs(), manifest.storage_name, f"manifest-{manifest.sequence}.json", "application/json"
    )


@staff_member_required
def asset_thumbnail(request, asset_id: int):
    """A small PNG of any stored asset (TIFF and JPEG 2000 included), for the review page."""
    if not request.user.has_perm("audit.view_asset"):
        raise PermissionDenied
    asset = get_object_or_404(through_jobs(request.user, Asset.objects.all(), "manifest__job"), pk=asset_id)
    with stores.outputs().open(asset.name, "rb") as fh:
        image = Image.open(fh)
        image.thumbnail((THUMBNAIL, THUMBNAIL))
        out = io.BytesIO()
        image.convert("RGBA" if image.mode in ("LA", "RGBA", "P") else "RGB").save(out, "PNG")
    response = HttpResponse(out.getvalue(), content_type="image/png")
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, max-age=3600"
    return response


@staff_member_required
def page_preview(request, preview_id: int):
    """A rendering of one input page, streamed inline for the review page's <img> (never sniffed)."""
    if not request.user.has_perm("audit.view_asset"):
        raise PermissionDenied
    preview = get_object_or_404(through_jobs(request.user, PagePreview.objects.all(), "manifest__job"), pk=preview_id)
    try:
        stored = stores.outputs().open(preview.storage_name, "rb")
    except FileNotFoundError:
        raise Http404("This preview was deleted with the outputs under retention.") from None
    response = FileResponse(stored, content_type=preview.content_type)
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, max-age=3600"  # a stored preview never changes
    return response


@staff_member_required
def review_page(request, manifest_id: int):
    """The bundle's page index, and one chunk of its pages in order, each with its assets and a flag control;
    pages without one are marked. POST raises a flag (from the form at the top or from a card) or splits cases."""
    if not request.user.has_perms(REVIEW_PAGE_PERMISSIONS):  # view_asset: its thumbnails and previews
        raise PermissionDenied
    manifest = get_object_or_404(
        through_jobs(request.user, Manifest.objects.select_related("job__bundle")), pk=manifest_id
    )
    form = FlagForm(request.POST if "pages" in request.POST else None, page_count=manifest.page_count)
    split_form = SplitForm(request.POST if "cases" in request.POST else None)
    if request.method == "POST" and "hint" in request.POST:
        return answered_hint(request, manifest)
    if request.method == "POST" and split_form.is_bound:
        if not request.user.has_perm("audit.add_casemap"):
            raise PermissionDenied
        if split_form.is_valid():
            try:
                cases.split(manifest, cases.parse_ranges(split_form.cleaned_data["cases"]), request.user.get_username())
                messages.success(request, "Cases recorded in a new signed case map.")
                return redirect(request.path)
            except cases.SplitRefused as exc:
                split_form.add_error("cases", str(exc))
            except store_witness.LedgerRollback as exc:  # the store holds the place this map would take
                store_witness.stop_appends(exc)
                split_form.add_error("cases", exc.message)
    elif request.method == "POST":
        if not request.user.has_perm("audit.add_reviewflag"):
            raise PermissionDenied
        if form.is_valid() and (flagged := raised_flag(request, manifest, form)):
            return flagged
    return render(request, "audit/review.html", review_context(request, manifest, form, split_form))


def raised_flag(request, manifest: Manifest, form: "FlagForm") -> HttpResponse | None:
    """The one way a flag is raised (review.raise_flag), then back at the flagged page's card, in its chunk,
    with the confirmation inside it: on a long bundle the top of the page is far from where the reviewer is."""
    try:
        flag = review.raise_flag(
            manifest,
            form.cleaned_data["pages"],
            form.cleaned_data["kind"],
            form.cleaned_data["note"],
            request.user.get_username(),
        )
    except review.FlagRefused as exc:
        form.add_error("pages", str(exc))
        return None
    first = flag.pages[0]
    messages.success(request, f"Flag raised on page(s) {display.page_ranges(flag.pages)}.", extra_tags=f"page-{first}")
    return redirect(f"{request.path}?from={chunks.first_of_chunk(first)}#page-{first}")


def answered_hint(request, manifest: Manifest) -> HttpResponse:
    """Confirm a suggestion (a flag, as if raised by hand) or dismiss it, then back at the suggestions."""
    if not request.user.has_perm("audit.add_reviewflag"):
        raise PermissionDenied
    asked = request.POST["hint"]
    hint = get_object_or_404(PageHint, pk=int(asked) if asked.isdigit() else 0, manifest=manifest)
    decision, by, pages = request.POST.get("decision"), request.user.get_username(), display.page_ranges(hint.pages)
    if decision == "confirm" and (flag := page_hints.confirm(hint, by)):
        messages.success(request, f"Suggestion confirmed: flag raised on page(s) {display.page_ranges(flag.pages)}.")
    elif decision == "dismiss" and page_hints.dismiss(hint, by):
        messages.success(request, f"Suggestion on page(s) {pages} dismissed.")
    elif decision in ("confirm", "dismiss"):
        messages.warning(request, f"The suggestion on page(s) {pages} was already answered by {hint.decided_by}.")
    else:
        messages.error(request, "Choose Confirm or Dismiss for a suggestion.")
    # An id no element has: a fragment naming the list would take the focus review.js gives the next suggestion.
    return redirect(f"{request.get_full_path()}#next-suggestion")


def review_context(request, manifest: Manifest, form: "FlagForm", split_form: "SplitForm") -> dict:
    pages, flags = review.pages_of(manifest), list(manifest.review_flags.all())
    flagged = review.mark_flags(pages, flags)
    previewed = previews.attach(pages, manifest)
    chunk = chunks.Chunk.asked(request.GET.get("from"), manifest.page_count)
    top_messages, notes = card_messages(request, chunk)
    hints = page_hints.for_review(manifest)
    case_maps = list(manifest.case_maps.prefetch_related("cases"))
    page_hints.note_case_numbering(manifest, case_maps)
    return {
        "hints": hints,
        "hints_state": page_hints.state_of(manifest),
        "suggested_pages": {n for hint in hints if hint.status == PageHint.Status.SUGGESTED for n in hint.pages},
        **admin.site.each_context(request),
        "title": f"Review manifest {manifest.sequence}",
        "manifest": manifest,
        "file_name": manifest.job.bundle.file_name,  # the thumbnails' alt text: a name, not the stored path
        "pages": pages,
        "chunk": chunk,
        "cards": [(page, notes.get(page.number, [])) for page in chunk.of(pages)],
        "top_messages": top_messages,
        "kinds": ReviewFlag.Kind.choices,
        "covered": sum(1 for page in pages if page.assets),
        "form": form,
        "missing": display.page_ranges(page.number for page in pages if not page.assets),
        "flagged": display.page_ranges(flagged),
        "previews": preview_progress(manifest, previewed),
        "flags": flags,
        "can_flag": request.user.has_perm("audit.add_reviewflag"),
        "split_form": split_form,
        "can_split": request.user.has_perm("audit.add_casemap"),
        "case_maps": case_maps,
        "verification": verification_state.of_manifest(manifest, request.user),
    }


def card_messages(request, chunk: chunks.Chunk) -> tuple[list, dict[int, list]]:
    """A flag's confirmation goes in the card of the page it names when that card is shown; the rest at the top."""
    top: list = []
    by_page: dict[int, list] = {}
    for message in messages.get_messages(request):
        tag = message.extra_tags or ""
        number = int(tag[5:]) if tag.startswith("page-") and tag[5:].isdigit() else 0
        if chunk.first <= number <= chunk.last:
            by_page.setdefault(number, []).append(message)
        else:
            top.append(message)
    return top, by_page


@staff_member_required
def review_previews(request, manifest_id: int):
    """What the review page polls while previews are being made: how many there are, and each one's URLs."""
    if not request.user.has_perms(REVIEW_PAGE_PERMISSIONS):
        raise PermissionDenied
    manifest = get_object_or_404(through_jobs(request.user, Manifest.objects.all()), pk=manifest_id)
    pages = review.pages_of(manifest, with_assets=False)
    state = preview_progress(manifest, previews.attach(pages, manifest))
    state["previews"] = [
        {
            "page": page.number,
            "src": reverse("page-preview", args=[page.preview.pk]),
            "large": reverse("page-preview", args=[(page.large_preview or page.preview).pk]),
            "width": page.preview.width,
            "height": page.preview.height,
        }
        for page in pages
        if page.preview
    ]
    return JsonResponse(state)


def preview_progress(manifest: Manifest, previewed: int) -> dict:
    """Final once every page has its preview, or once their request ended (failed, skipped) or retention deleted
    them; until then it says only what is true: being made, overdue, or asked for again (and when)."""
    total = manifest.page_count
    text, making = f"{previewed} of {total} pages have a preview", False
    if previewed >= total:
        final = True
    elif previews.outputs_deleted(manifest):
        final, text = True, f"{text}: the outputs were deleted under retention"
    else:
        state = preview_requests.state_of(manifest)
        final, text, making = state.final, f"{text}{state.text}", state.making
    return {
        "final": final,
        "making": making,
        "text": {"previewed": text, "percent": str(round(100 * previewed / total) if total else 100)},
    }


class SplitForm(forms.Form):
    cases = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="One case a line: 'claim 1042: 1-12'. Ranges may not overlap.",
    )


class FlagForm(forms.Form):
    pages = forms.CharField(help_text="Page numbers, e.g. 3, 7-9")
    kind = forms.ChoiceField(choices=ReviewFlag.Kind.choices)
    note = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)

    def __init__(self, *args, page_count: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.page_count = page_count

    def clean_pages(self) -> list[int]:
        pages: list[int] = []
        for part in filter(None, (p.strip() for p in self.cleaned_data["pages"].split(","))):
            low, _, high = (p.strip() for p in part.partition("-"))
            if not low.isdigit() or (high and not high.isdigit()):
                raise forms.ValidationError(f"{part!r} is not a page number or a range like 7-9.")
            if high and int(high) < int(low):
                raise forms.ValidationError(f"{part!r} runs backwards: write the first page first ({high}-{low}).")
            pages += range(int(low), int(high or low) + 1)
        return pages
