"""The latest verification of manifests, and their open findings: the one query every page and list uses.

A manifest's latest verification is the newest finished run (passed or failed; an errored run checked nothing to
the end) that covered it: a whole-deployment run, a run of its bundle or a date range holding its creation, started
after the manifest existed. Its open findings are that run's findings about the manifest that no one has resolved
(acknowledged ones stay open). An older run's findings are history: a later run found again what is still wrong.

Everything is annotated onto the caller's queryset with correlated subqueries, so a list of any length costs the
same number of queries (bench.admin_scale and tests/audit/test_verification_state.py count them).
"""

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, Exists, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.urls import reverse

from core import display

from .models import Finding, FindingResponse, Manifest, VerificationRun

FINISHED = (VerificationRun.Status.PASSED, VerificationRun.Status.FAILED)


@dataclass(frozen=True)
class Paths:
    """Where the manifest's columns are, seen from the rows being annotated."""

    manifest: str
    created_at: str
    bundle: str


OF_MANIFESTS = Paths(manifest="pk", created_at="created_at", bundle="job__bundle_id")
OF_JOBS = Paths(manifest="manifest__pk", created_at="manifest__created_at", bundle="bundle_id")
# A bundle's newest manifest, annotated by the bundle list (audit/admin/bundles.py): its latest extraction.
OF_BUNDLES = Paths(manifest="newest_manifest", created_at="newest_manifest_at", bundle="pk")
OF_CASES = Paths(
    manifest="case_map__manifest_id",
    created_at="case_map__manifest__created_at",
    bundle="case_map__manifest__job__bundle_id",
)


def _latest_run(paths: Paths) -> QuerySet:
    created = OuterRef(paths.created_at)
    return (
        VerificationRun.objects.filter(status__in=FINISHED, started_at__gte=created)
        .filter(Q(scope_bundle__isnull=True) | Q(scope_bundle=OuterRef(paths.bundle)))
        .filter(Q(scope_from__isnull=True) | Q(scope_from__lte=created))
        .filter(Q(scope_to__isnull=True) | Q(scope_to__gt=created))
        .order_by("-finished_at", "-pk")
    )


def _count(findings: QuerySet) -> Coalesce:
    counted = findings.order_by().values("run").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def _resolved() -> Exists:
    return Exists(FindingResponse.objects.filter(finding=OuterRef("pk"), status=FindingResponse.Status.RESOLVED))


def open_findings(run_ref, manifest_ref) -> QuerySet:
    """Findings of run `run_ref` about manifest `manifest_ref` that no one has resolved."""
    return Finding.objects.filter(run=run_ref, manifest=manifest_ref).filter(~_resolved())


def with_verification(rows: QuerySet, paths: Paths = OF_MANIFESTS) -> QuerySet:
    """`rows` annotated with `verified_run`, `verified_status`, `verified_at` (None: never verified), `run_findings`
    (that run's findings about the manifest) and `open_findings` (those not resolved)."""
    latest = _latest_run(paths)
    rows = rows.annotate(
        verified_run=Subquery(latest.values("pk")[:1]),
        verified_status=Subquery(latest.values("status")[:1]),
        verified_at=Subquery(latest.values("finished_at")[:1]),
    )
    about = Finding.objects.filter(run=OuterRef("verified_run"), manifest=OuterRef(paths.manifest))
    return rows.annotate(
        run_findings=_count(about),
        open_findings=_count(open_findings(OuterRef("verified_run"), OuterRef(paths.manifest))),
    )


def having_open_findings(rows: QuerySet, paths: Paths = OF_MANIFESTS, has: bool = True) -> QuerySet:
    """The rows whose manifest's latest verification left findings open (or, `has=False`, those without)."""
    rows = rows.alias(latest_run=Subquery(_latest_run(paths).values("pk")[:1]))  # filtered on, not selected
    found = Exists(open_findings(OuterRef("latest_run"), OuterRef(paths.manifest)))
    return rows.filter(found) if has else rows.exclude(found)


@dataclass
class Verification:
    """What a page says about one manifest's latest verification."""

    run_id: int | None
    status: str | None
    at: datetime | None
    run_findings: int
    open_findings: int
    findings: list[Finding] = field(default_factory=list)
    linked: bool = False  # whether the person may open the run and its findings

    @property
    def verdict(self) -> str:
        return verdict(self.run_id, self.status, self.run_findings, self.open_findings)

    @property
    def summary(self) -> str:
        """One sentence: when, by which run, clean or its findings."""
        if self.run_id is None:
            return "Not verified yet: no finished verification run has covered it."
        run = f"verification run {self.run_id} at {display.timestamp(self.at)}"
        if not self.run_findings:
            return f"Verified clean by {run}."
        if self.open_findings:
            return f"Failed: {run} found {self.run_findings} finding(s), {self.open_findings} still open."
        return f"{run[0].upper()}{run[1:]} found {self.run_findings} finding(s), all resolved."

    @property
    def run_url(self) -> str:
        return reverse("admin:audit_verificationrun_change", args=[self.run_id]) if self.run_id else ""

    @property
    def has_open_findings(self) -> bool:
        return self.open_findings > 0


def verdict(run_id, status, run_findings: int, open_count: int) -> str:
    """The few words a list cell shows."""
    if run_id is None:
        return "not verified yet"
    if open_count:
        return f"{open_count} open finding(s)"
    if run_findings:
        return f"{run_findings} finding(s), all resolved"
    return "verified clean"


def of_manifest(manifest: Manifest | None, user=None) -> Verification | None:
    """The latest verification of one manifest, with that run's findings about it (and their answers); linked to
    the run and findings only for a `user` who may open them."""
    if manifest is None:
        return None
    row = with_verification(Manifest.objects.filter(pk=manifest.pk)).values(
        "verified_run", "verified_status", "verified_at", "run_findings", "open_findings"
    )[0]
    state = Verification(
        row["verified_run"], row["verified_status"], row["verified_at"], row["run_findings"], row["open_findings"]
    )
    state.linked = user is not None and user.has_perms(["audit.view_verificationrun", "audit.view_finding"])
    if state.run_findings:
        about = Finding.objects.filter(run=state.run_id, manifest=manifest).select_related("asset", "response")
        state.findings = list(about.order_by("pk"))
    return state


def findings_url(run_id: int, manifest_id: int) -> str:
    return reverse("admin:audit_finding_changelist") + f"?run__id__exact={run_id}&manifest__id__exact={manifest_id}"
