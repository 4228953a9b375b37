"""The latest verification of manifests, and their open findings: the one query every page and list uses.

A manifest's latest verification is the newest finished run (passed or failed; an errored run checked nothing to
the end) that covered it: a whole-deployment run, a run of its bundle or a date range holding its creation, started
after the manifest existed. Its open findings are that run's findings about the manifest that no one has resolved
(acknowledged ones stay open). An older run's findings are history: a later run found again what is still wrong.

Everything is annotated onto the caller's queryset with correlated subqueries, so a list of any length costs the
same number of queries (bench.admin_scale and tests/audit/test_verification_state.py count them).
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, Exists, F, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.urls import reverse

from audit.models import CaseMap, Finding, FindingResponse, Manifest, VerificationRun
from core import display
from extraction.models import Job

FINISHED = (VerificationRun.Status.PASSED, VerificationRun.Status.FAILED)


@dataclass(frozen=True)
class Paths:
    """How the rows name their manifest: its id, creation time and bundle, as the rows' own columns or correlated
    subqueries, never joins (a join stays in the list's count and in each filter's choices, over the whole table)."""

    subject: Callable[[], dict]
    among: Callable[[QuerySet], Q]  # the rows about any of these manifests (an index lookup, to narrow a filter)


def _manifests() -> dict:
    job = Job.objects.filter(pk=OuterRef("job_id"))
    return {"subject_manifest": F("pk"), "subject_at": F("created_at"), "subject_bundle": _one(job, "bundle_id")}


def _jobs() -> dict:
    manifest = Manifest.objects.filter(job=OuterRef("pk"))
    return {
        "subject_manifest": _one(manifest, "pk"),
        "subject_at": _one(manifest, "created_at"),
        "subject_bundle": F("bundle_id"),
    }


def _bundles() -> dict:
    """A bundle's newest manifest: its latest extraction."""
    newest = Manifest.objects.filter(job__bundle=OuterRef("pk")).order_by("-sequence")
    return {"subject_manifest": _one(newest, "pk"), "subject_at": _one(newest, "created_at"), "subject_bundle": F("pk")}


def _cases() -> dict:
    case_map = CaseMap.objects.filter(pk=OuterRef("case_map_id"))
    return {
        "subject_manifest": _one(case_map, "manifest_id"),
        "subject_at": _one(case_map, "manifest__created_at"),
        "subject_bundle": _one(case_map, "manifest__job__bundle_id"),
    }


def _one(rows: QuerySet, column: str) -> Subquery:
    return Subquery(rows.values(column)[:1])


OF_MANIFESTS = Paths(_manifests, lambda manifests: Q(pk__in=manifests))
OF_JOBS = Paths(_jobs, lambda manifests: Q(pk__in=Manifest.objects.filter(pk__in=manifests).values("job_id")))
OF_BUNDLES = Paths(_bundles, lambda manifests: Q(pk__in=Job.objects.filter(manifest__in=manifests).values("bundle_id")))
OF_CASES = Paths(_cases, lambda manifests: Q(case_map__in=CaseMap.objects.filter(manifest__in=manifests).values("pk")))


def _named(rows: QuerySet, paths: Paths) -> QuerySet:
    """The subject's columns, once, as aliases (filtered and referred to, not selected)."""
    return rows if "subject_manifest" in rows.query.annotations else rows.alias(**paths.subject())


def _latest_run() -> QuerySet:
    created = OuterRef("subject_at")
    return (
        VerificationRun.objects.filter(status__in=FINISHED, started_at__gte=created)
        .filter(Q(scope_bundle__isnull=True) | Q(scope_bundle=OuterRef("subject_bundle")))
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
    """`rows` annotated with `verified_manifest`, `verified_run`, `verified_status`, `verified_at` (None: never
    verified), `run_findings` (that run's findings about the manifest) and `open_findings` (those not resolved)."""
    latest = _latest_run()
    rows = _named(rows, paths).annotate(
        verified_manifest=F("subject_manifest"),
        verified_run=Subquery(latest.values("pk")[:1]),
        verified_status=Subquery(latest.values("status")[:1]),
        verified_at=Subquery(latest.values("finished_at")[:1]),
    )
    about = Finding.objects.filter(run=OuterRef("verified_run"), manifest=OuterRef("subject_manifest"))
    return rows.annotate(
        run_findings=_count(about),
        open_findings=_count(open_findings(OuterRef("verified_run"), OuterRef("subject_manifest"))),
    )


def having_open_findings(rows: QuerySet, paths: Paths = OF_MANIFESTS, has: bool = True) -> QuerySet:
    """The rows whose manifest's latest verification left findings open (or, `has=False`, those without)."""
    # Only rows about a manifest with any unresolved finding are checked against their latest run: without that, a
    # filter over 100k manifests runs the latest-run subquery for each (seconds), with it a few index lookups.
    unresolved = Finding.objects.filter(manifest__isnull=False).filter(~_resolved()).values("manifest_id")
    named = _named(rows, paths).alias(latest_run=Subquery(_latest_run().values("pk")[:1]))  # filtered, not selected
    found = Exists(open_findings(OuterRef("latest_run"), OuterRef("subject_manifest")))
    having = named.filter(paths.among(unresolved)).filter(found)
    return having if has else rows.exclude(pk__in=having.values("pk"))


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
