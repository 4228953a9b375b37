from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = "Audit"

    def ready(self):
        from extraction.signals import activity

        activity.connect(record_activity, dispatch_uid="audit-activity")


def record_activity(sender, actor, action, obj, before=None, after=None, **kwargs):
    from .models import ActivityEvent

    ActivityEvent.record(actor, action, obj, before=before, after=after)
