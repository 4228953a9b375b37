from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = "Audit"

    def ready(self):
        from django.contrib.admin.models import LogEntry
        from django.contrib.auth.models import Group, User
        from django.db.models.signals import m2m_changed, post_migrate, post_save
        from django_q.signals import post_spawn

        from audit import api, schedules
        from audit.ledger import activity_records, signing, witnessing  # noqa: F401 (witnessing: its system check)
        from audit.ledger.manifest_writing import record_completion
        from audit.models.keys import key_published
        from audit.operations import access_activity, webhook_redrive
        from audit.operations.roles import ensure_roles_after_migrate
        from audit.review.page_hints import redrive_hints
        from audit.review.previews import redrive_previews
        from audit.verification import queued_runs
        from extraction import completion, job_evidence, reconciler
        from extraction.signals import activity, alert, alert_cleared

        activity.connect(record_activity, dispatch_uid="audit-activity")
        key_published.connect(activity_records.record_key_published, dispatch_uid="audit-key-published")
        alert.connect(open_alert, dispatch_uid="audit-alert")
        alert_cleared.connect(clear_alert, dispatch_uid="audit-alert-cleared")
        post_migrate.connect(ensure_roles_after_migrate, sender=self, dispatch_uid="audit-roles")
        post_migrate.connect(schedules.ensure_schedules, sender=self, dispatch_uid="audit-schedules")
        post_migrate.connect(signing.publish_after_migrate, sender=self, dispatch_uid="audit-signing-key")
        post_spawn.connect(witness_at_worker_start, dispatch_uid="audit-store-witness")
        post_save.connect(access_activity.record_admin_change, sender=LogEntry, dispatch_uid="audit-admin-access")
        for through in (User.groups.through, User.user_permissions.through, Group.permissions.through):
            m2m_changed.connect(access_activity.record_membership, sender=through, dispatch_uid=f"audit-{through}")
        completion.register(record_completion)  # extraction calls it once per completed job, never imports audit
        job_evidence.register(api.job_evidence)  # what a job's API answer names of its evidence
        reconciler.register("previews_redriven", redrive_previews)  # previews whose queued task was lost
        reconciler.register("page_hints_redriven", redrive_hints)  # page hints likewise
        reconciler.register("verification_runs_woken", queued_runs.redrive)  # runs started in the admin, likewise
        reconciler.register("verification_runs_abandoned", queued_runs.redrive_abandoned)  # their worker died
        reconciler.register("alert_webhooks_redriven", webhook_redrive.redrive)  # alert webhooks whose try was lost


def witness_at_worker_start(proc_name=None, **kwargs):
    """The output store against the database before this worker appends anything (audit/ledger/store_witness.py)."""
    import logging

    from audit.ledger.store_witness import check_at_start

    try:
        logging.getLogger("audit.ledger.store_witness").info("worker %s: %s", proc_name, check_at_start())
    except Exception:  # a store that cannot be read now: each append checks its own position anyway
        logging.getLogger("audit.ledger.store_witness").exception("the store witness check at worker start failed")


def record_activity(sender, actor, action, obj, before=None, after=None, **kwargs):
    from audit.ledger import activity_records

    activity_records.record(actor, action, obj, before=before, after=after)


def clear_alert(sender, key, **kwargs):
    from audit.operations.alerts import clear_alert

    clear_alert(key)


def open_alert(sender, kind, key, message, link, **kwargs):
    from audit.operations.alerts import raise_alert

    raise_alert(kind, key, message, link)
