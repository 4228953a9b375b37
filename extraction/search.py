"""Finding a list's rows by the names people know: a bundle's file name, case label, submitter, or the first
characters of its correlation id. Every list of both apps searches the same way (the `NamedSearch` mixin).

Written as one subquery per hop down to the bundle, never as an OR across joins: Django's default search joins
every row of the list to its bundle, and the database then reads every job (or asset) before it can answer.
"""

import re
from functools import reduce
from operator import or_

from django.contrib import admin
from django.db.models import Model, Q, QuerySet

from .models import Bundle
from .visibility import bundles as visible_bundles

HELP = (
    "Finds a file name, case label or submitter by any part of it (claim-1042, tracemonkey), "
    "or a correlation id (sha256) by its first {n} or more characters."
)
MIN_PREFIX = 6  # a shorter run of hex digits is too often part of a file name to be read as a hash
HEX = re.compile(rf"[0-9a-f]{{{MIN_PREFIX},64}}")
RECENT_LABELS = 200  # the newest bundles whose labels the filter offers (an index walk, not every bundle)
SHOWN_LABELS = 25


def cleaned(raw: str) -> str:
    """The term as typed, without a NUL (PostgreSQL refuses one in any string: an error page, not a result)."""
    return raw.replace("\x00", "").strip()


def named(term: str, *, file="original_filename", label="case_label", by="submitted_by", digest="correlation_id"):
    """Rows whose names contain `term`, or whose hash starts with it (case-sensitive `startswith`: the index's)."""
    found = Q(**{f"{file}__icontains": term}) | Q(**{f"{by}__icontains": term})
    if label:
        found |= Q(**{f"{label}__icontains": term})
    if HEX.fullmatch(term.lower()):
        found |= Q(**{f"{digest}__startswith": term.lower()})
    return found


def bundles_named(term: str) -> QuerySet:
    return Bundle.objects.filter(named(term)).values("pk")


def through(model: type[Model], path: str, bundles: QuerySet) -> Q:
    """The rows of `model` whose `path` (say `manifest__job__bundle`) leads to one of `bundles`: one subquery per
    hop, so each is a lookup on a foreign key's index."""
    if not path:
        return Q(pk__in=bundles)
    hop, _, rest = path.partition("__")
    if not rest:
        return Q(**{f"{hop}__in": bundles})
    related = model._meta.get_field(hop).related_model
    assert isinstance(related, type)  # a foreign key's, never "self" once the app registry is ready
    return Q(**{f"{hop}__in": related._default_manager.filter(through(related, rest, bundles)).values("pk")})


class NamedSearch(admin.ModelAdmin):
    """A ModelAdmin base: search the list by its bundles' names (`bundle_paths`: how a row reaches its bundle),
    by the exact values of `exact_fields` (hashes, keys: an equality on their own index) and by any part of
    `also_containing`. `search_fields` is left declared as what it searches, for whoever reads the admin."""

    bundle_paths: tuple[str, ...] = ("bundle",)
    exact_fields: tuple[str, ...] = ()
    also_containing: tuple[str, ...] = ()  # the row's own names (a case's, a reviewer's), found by any part
    own_names: dict[str, str] | None = None  # `named`'s fields on the row itself: it names a file before any bundle
    search_help_text = HELP.format(n=MIN_PREFIX)

    def get_search_results(self, request, queryset, search_term):
        term = cleaned(search_term)
        if not term:
            return queryset, False
        found = self.found_by_name(queryset.model, term)
        for field in self.exact_fields:  # hashes are stored in lower case; a provider's ids as it gave them
            found |= Q(**{f"{field}__in": {term, term.lower()}})
        for field in self.also_containing:
            found |= Q(**{f"{field}__icontains": term})
        return queryset.filter(found), False

    def found_by_name(self, model: type[Model], term: str) -> Q:
        if self.own_names is not None:
            return named(term, **self.own_names)
        bundles = bundles_named(term)
        return reduce(or_, (through(model, path, bundles) for path in self.bundle_paths))


def case_label_filter(*paths: str) -> type[admin.SimpleListFilter]:
    """A filter by the case label of the rows' bundle; it offers the labels of the newest bundles, and any label
    typed into the URL (`?case_label=claim-1042`) filters too."""

    class CaseLabelFilter(admin.SimpleListFilter):
        title, parameter_name = "case label", "case_label"

        def lookups(self, request, model_admin):
            # Only labels of bundles this person may see: a Submitter is not told other teams' cases.
            newest = visible_bundles(request.user).exclude(case_label="").order_by("-created_at")
            labels = list(dict.fromkeys(newest.values_list("case_label", flat=True)[:RECENT_LABELS]))[:SHOWN_LABELS]
            chosen = self.value()
            return [(label, label) for label in labels + ([chosen] if chosen and chosen not in labels else [])]

        def queryset(self, request, queryset):
            if self.value() is None:
                return queryset
            bundles = Bundle.objects.filter(case_label=cleaned(str(self.value()))).values("pk")
            return queryset.filter(reduce(or_, (through(queryset.model, path, bundles) for path in paths)))

    return CaseLabelFilter
