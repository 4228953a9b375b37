# The row that says which service account may read a bundle becomes BundleAccess; Submission now means one
# upload on its way through intake (received by the web tier, decided by an intake worker).

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("extraction", "0013_attempt_kind_store"),
    ]

    operations = [
        migrations.RenameModel(old_name="Submission", new_name="BundleAccess"),
        migrations.AlterField(
            model_name="bundleaccess", name="account",
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="bundle_accesses",
                                    to="extraction.serviceaccount")),
        migrations.AlterField(
            model_name="bundleaccess", name="bundle",
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="accesses",
                                    to="extraction.bundle")),
        migrations.CreateModel(
            name='Submission',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('state', models.CharField(choices=[('pending', 'Pending'), ('accepted', 'Accepted'), ('refused', 'Refused')], db_index=True, default='pending', max_length=20)),
                ('staged_name', models.CharField(help_text="The file in this host's temp uploads while pending", max_length=100)),
                ('queue', models.CharField(help_text='The intake queue of the host holding the staged file', max_length=100)),
                ('size', models.BigIntegerField()),
                ('sha256', models.CharField(max_length=64)),
                ('original_filename', models.CharField(blank=True, help_text='As given; display only', max_length=255)),
                ('submitted_by', models.CharField(max_length=150)),
                ('case_label', models.CharField(blank=True, max_length=200)),
                ('created', models.BooleanField(default=False, help_text="Its job (or the job's access) was new to the submitter")),
                ('error_code', models.CharField(blank=True, max_length=50)),
                ('error_message', models.TextField(blank=True)),
                ('retryable', models.BooleanField(default=False, help_text='Refused for a fault of this machine: send it again')),
                ('tries', models.PositiveSmallIntegerField(default=0)),
                ('claimed_until', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('last_woken_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('decided_at', models.DateTimeField(blank=True, null=True)),
                ('account', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='submissions', to='extraction.serviceaccount')),
                ('job', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='extraction.job')),
            ],
            options={
                'db_table': 'extraction_intake_submission',
                'ordering': ['-created_at'],
            },
        ),
        migrations.AddField(
            model_name='idempotencyrecord',
            name='submission',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='extraction.submission'),
        ),
        migrations.AddIndex(
            model_name='submission',
            index=models.Index(fields=['state', 'claimed_until'], name='submission_state_claim'),
        ),
        migrations.AddIndex(
            model_name='submission',
            index=models.Index(fields=['created_at'], name='submission_created'),
        ),
    ]
