"""Least visibility: which bundles and jobs a person may see.

Staff whose work spans every bundle hold `extraction.view_all_bundles` (Compliance staff, Reviewers, Retention
admins; superusers hold every permission) and see all. Everyone else (Submitters) sees only what they or their
team submitted. A *team* is a Django group that grants no permission: the role groups all grant some, and
everyone holding a role shares its group, so a role never makes a team.

A person submitted a bundle when they uploaded it first (`Bundle.submitted_by`) or uploaded the same bytes later
and were given its job (an accepted `Submission`). What is out of sight is refused exactly like what does not
exist (the admin's "does not exist", a 404), so a refusal never tells that someone else sent a file.
"""

from django.contrib.auth import get_user_model
from django.db.models import Q, QuerySet

from .intake.submission import Submission
from .models import Bundle, Job, Rejection

SEE_ALL = "extraction.view_all_bundles"


def sees_everything(user) -> bool:
    return user.has_perm(SEE_ALL)


def team_of(user) -> QuerySet:
    """The usernames whose submissions `user` sees: their own and their teams' members'."""
    teams = user.groups.filter(permissions__isnull=True)
    users = get_user_model().objects.filter(Q(pk=user.pk) | Q(groups__in=teams))
    return users.values(get_user_model().USERNAME_FIELD)


def bundles(user, queryset: QuerySet[Bundle] | None = None) -> QuerySet[Bundle]:
    """`queryset` (default: every bundle) narrowed to what `user` may see."""
    queryset = Bundle.objects.all() if queryset is None else queryset
    if sees_everything(user):
        return queryset
    team = team_of(user)
    given = Submission.objects.filter(state=Submission.State.ACCEPTED, submitted_by__in=team).values("job__bundle")
    # As a subquery of primary keys: the caller's joins and counts stay as they were.
    mine = Bundle.objects.filter(Q(submitted_by__in=team) | Q(pk__in=given)).values("pk")
    return queryset.filter(pk__in=mine)


def jobs(user, queryset: QuerySet[Job] | None = None) -> QuerySet[Job]:
    """The jobs of the bundles `user` may see."""
    queryset = Job.objects.all() if queryset is None else queryset
    return queryset if sees_everything(user) else queryset.filter(bundle__in=bundles(user).values("pk"))


def rejections(user, queryset: QuerySet[Rejection] | None = None) -> QuerySet[Rejection]:
    """The refused uploads of `user` and their team (a refusal names a file someone tried to send)."""
    queryset = Rejection.objects.all() if queryset is None else queryset
    return queryset if sees_everything(user) else queryset.filter(submitted_by__in=team_of(user))


def through_jobs(user, queryset: QuerySet, job: str = "job") -> QuerySet:
    """Rows reached through a job (manifests: "job"; assets, previews: "manifest__job"), narrowed to the jobs
    `user` may see."""
    return queryset if sees_everything(user) else queryset.filter(**{f"{job}__in": jobs(user).values("pk")})
