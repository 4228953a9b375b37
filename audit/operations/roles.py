"""The roles as groups of permissions. Superusers administer users and providers.

A retention policy change needs two people: a Retention admin drafts it, a Retention approver (someone
else) approves it. One person may hold both roles; they still cannot approve their own drafts.

Original input PDFs are personal data beyond what an audit needs: `extraction.download_input` is its own
permission, held by the role that compares extractions with their originals (Reviewer), implied by no other.
A role that can open a page can fetch everything the page shows (the review page needs view_asset).
"""

ROLES = {
    "Compliance staff": [
        "extraction.view_bundle",
        "extraction.view_intakepolicy",  # the policy version a bundle names
        "extraction.view_all_bundles",
        "extraction.view_job",
        "extraction.view_attempt",
        "extraction.view_rejection",
        "extraction.view_submissionswitch",
        "audit.view_manifest",
        "audit.view_asset",
        "audit.view_placement",
        "audit.view_verificationrun",
        "audit.view_finding",
        "audit.respond_to_finding",
        "audit.view_checkpoint",
        "audit.view_logcheckpoint",
        "audit.view_retentionpolicy",
        "audit.view_retentionevent",
        "audit.view_activityevent",
        "audit.view_reviewflag",
        "audit.run_verification",
        "audit.export_evidence",
        "audit.view_casemap",
        "audit.view_case",
        "audit.view_signingkey",
        "audit.view_alert",
        "audit.view_webhookdelivery",
        # Who may submit over the API, and what each account submitted (read-only; tokens are never shown).
        "extraction.view_serviceaccount",
        "extraction.view_serviceaccounttoken",
        "extraction.view_submission",
        # What each account was told by its webhook, and every try (read-only; replay is granted one by one).
        "extraction.view_webhookevent",
        "extraction.view_webhookattempt",
    ],
    "Reviewer": [
        "extraction.view_bundle",
        "extraction.view_intakepolicy",  # the policy version a bundle names
        "extraction.view_all_bundles",
        "extraction.view_job",
        "extraction.view_attempt",
        "audit.view_manifest",
        "audit.view_asset",
        "audit.view_placement",
        "audit.view_reviewflag",
        "audit.add_reviewflag",
        "audit.change_reviewflag",
        "audit.request_reextraction",
        "audit.view_casemap",
        "audit.add_casemap",
        "audit.view_case",
        "audit.change_case",
        "extraction.download_input",
    ],
    "Retention admin": [
        # Jobs: an input waits for all its bundle's jobs to end, and the manifests they link to.
        "extraction.view_bundle",
        "extraction.view_intakepolicy",  # the policy version a bundle names
        "extraction.view_all_bundles",
        "extraction.view_job",
        "extraction.view_attempt",
        "audit.view_manifest",
        "audit.view_retentionpolicy",
        "audit.add_retentionpolicy",
        "audit.view_retentionevent",
        "audit.view_activityevent",
        "audit.run_retention",
    ],
    "Retention approver": [
        "audit.view_retentionpolicy",
        "audit.approve_retentionpolicy",
        "audit.view_retentionevent",
        "audit.view_activityevent",
    ],
    # Whoever feeds bundles in: upload, then follow the job (and see why an upload was refused). Not
    # view_all_bundles: a Submitter sees only what they or their team submitted (extraction.visibility).
    "Submitter": [
        "extraction.submit_bundle",
        "extraction.view_bundle",
        "extraction.view_intakepolicy",  # the policy version a bundle names
        "extraction.view_job",
        "extraction.view_attempt",
        "extraction.view_rejection",
    ],
}


def ensure_roles(group_model, permission_model) -> dict[str, int]:
    """Make each group hold exactly its permissions (models passed in, so a migration can call it).

    A permission whose model a migration has not created yet is skipped; the post-migrate hook
    runs this again once every migration has run.
    """
    shaped = {}
    for name, perms in ROLES.items():
        group, _ = group_model.objects.get_or_create(name=name)
        wanted = [
            found
            for p in perms
            for found in permission_model.objects.filter(
                content_type__app_label=p.split(".")[0], codename=p.split(".")[1]
            )
        ]
        group.permissions.set(wanted)
        shaped[name] = len(wanted)
    return shaped


def ensure_roles_after_migrate(**kwargs):
    from django.contrib.auth.models import Group, Permission

    ensure_roles(Group, Permission)
