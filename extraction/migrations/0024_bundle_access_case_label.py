from django.db import migrations, models


def labels_from_submissions(apps, schema_editor):
    """Each access takes the label of its account's first accepted submission of those bytes; with none left (a
    deleted submission), the bundle's own only when this account was its first sender, else none (never another's)."""
    BundleAccess = apps.get_model("extraction", "BundleAccess")
    Submission = apps.get_model("extraction", "Submission")
    for access in BundleAccess.objects.select_related("bundle", "account").iterator(chunk_size=500):
        first = (
            Submission.objects.filter(account_id=access.account_id, sha256=access.bundle.correlation_id, state="accepted")
            .order_by("created_at", "pk")
            .values_list("case_label", flat=True)
            .first()
        )
        if first is None and access.bundle.submitted_by == f"api:{access.account.name}":
            first = access.bundle.case_label
        if first:
            BundleAccess.objects.filter(pk=access.pk).update(case_label=first)


class Migration(migrations.Migration):

    dependencies = [
        ('extraction', '0023_attached_pdfs_as_bundles'),
    ]

    operations = [
        migrations.AddField(
            model_name='bundleaccess',
            name='case_label',
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.RunPython(labels_from_submissions, migrations.RunPython.noop),
    ]
