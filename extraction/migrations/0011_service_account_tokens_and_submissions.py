"""Tokens move to their own rows with an expiry; API bundles become their account's submissions."""

from datetime import timedelta

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


def keep_tokens_and_submissions(apps, schema_editor):
    """Each existing token stays valid, now with an expiry; each account keeps seeing what it submitted."""
    ServiceAccount, Token, Bundle, Job, Submission = (apps.get_model("extraction", name) for name in (
        "ServiceAccount", "ServiceAccountToken", "Bundle", "Job", "Submission"))
    expires = django.utils.timezone.now() + timedelta(days=settings.PAGETRAIL_TOKEN_DAYS)
    for account in ServiceAccount.objects.all():
        Token.objects.create(account=account, token_sha256=account.token_sha256, prefix=account.token_prefix,
                             created_by=account.created_by, created_at=account.created_at, expires_at=expires,
                             revoked_at=account.revoked_at)
        for bundle in Bundle.objects.filter(submitted_by=f"api:{account.name}"):
            first = Job.objects.filter(bundle=bundle).order_by("pk").first()
            if first:
                Submission.objects.create(account=account, bundle=bundle, job=first, created_at=bundle.created_at)


class Migration(migrations.Migration):

    dependencies = [
        ('extraction', '0010_bundle_submit_and_download_permissions'),
    ]

    operations = [
        migrations.CreateModel(
            name='ServiceAccountToken',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('token_sha256', models.CharField(editable=False, max_length=64, unique=True)),
                ('prefix', models.CharField(editable=False, help_text='To recognise a token, not to use it', max_length=12)),
                ('created_by', models.CharField(blank=True, editable=False, max_length=150)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                ('expires_at', models.DateTimeField(editable=False)),
                ('revoked_at', models.DateTimeField(blank=True, editable=False, null=True)),
                ('account', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='tokens', to='extraction.serviceaccount')),
            ],
            options={
                'ordering': ['-created_at'],
            },
        ),
        migrations.CreateModel(
            name='Submission',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('account', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='submissions', to='extraction.serviceaccount')),
                ('bundle', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='submissions', to='extraction.bundle')),
                ('job', models.ForeignKey(help_text='The job this account was given first', on_delete=django.db.models.deletion.CASCADE, related_name='+', to='extraction.job')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('account', 'bundle'), name='one_submission_per_account')],
            },
        ),
        migrations.RunPython(keep_tokens_and_submissions, migrations.RunPython.noop),
        migrations.RemoveField(
            model_name='serviceaccount',
            name='token_prefix',
        ),
        migrations.RemoveField(
            model_name='serviceaccount',
            name='token_sha256',
        ),
    ]
