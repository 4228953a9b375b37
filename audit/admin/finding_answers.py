"""The Findings list's answers: acknowledge or resolve the selected findings with a note (the action form's
field), for those holding audit.respond_to_finding; every other person is not offered the actions."""

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ActionForm

from audit.admin.people import activity_of
from audit.models import FindingResponse
from audit.verification import answers as finding_answers
from core.admin_base import ReadOnlyAdmin


class AnswerFilter(admin.SimpleListFilter):
    """Open means no one has answered it yet (no answer row, or one still open)."""

    title, parameter_name = "answer", "answer"

    def lookups(self, request, model_admin):
        return [("open", "open (not answered)"), ("acknowledged", "acknowledged"), ("resolved", "resolved")]

    def queryset(self, request, queryset):
        answered = [FindingResponse.Status.ACKNOWLEDGED, FindingResponse.Status.RESOLVED]
        if self.value() == "open":
            return queryset.exclude(response__status__in=answered)
        if self.value() in answered:
            return queryset.filter(response__status=self.value())
        return queryset


class NoteActionForm(ActionForm):
    note = forms.CharField(
        required=False,
        max_length=finding_answers.NOTE_LIMIT,
        help_text="Acknowledging or resolving needs a note: what was seen, or what was done about it.",
    )


class FindingAnswersAdmin(ReadOnlyAdmin):
    """FindingAdmin's base: the actions, their permission and the answer column."""

    action_form = NoteActionForm
    readonly_fields = ("answer", "answers_recorded")
    actions = ["acknowledge_findings", "resolve_findings"]

    def has_respond_permission(self, request):
        return request.user.has_perm("audit.respond_to_finding")

    @admin.action(description="Acknowledge the selected findings (with the note)", permissions=["respond"])
    def acknowledge_findings(self, request, queryset):
        self._answer(request, queryset, finding_answers.acknowledge, "acknowledged")

    @admin.action(description="Resolve the selected findings (with the note)", permissions=["respond"])
    def resolve_findings(self, request, queryset):
        self._answer(request, queryset, finding_answers.resolve, "resolved")

    def _answer(self, request, queryset, answer, done: str) -> None:
        try:
            result = answer(queryset.order_by("pk"), request.user.get_username(), request.POST.get("note", ""))
        except finding_answers.AnswerRefused as refused:
            self.message_user(request, f"Refused ({refused.code}): {refused.message}", level=messages.ERROR)
            return
        left = f"; {result.unchanged} were already {done} or past it" if result.unchanged else ""
        self.message_user(request, f"{result.changed} finding(s) {done}{left}.")

    @admin.display(description="answer")
    def answer(self, finding):
        return finding_answers.answers_of(finding)

    @admin.display(description="answers recorded (activity)")
    def answers_recorded(self, finding):
        return activity_of(finding)
