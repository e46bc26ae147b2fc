"""Indexes for the admin's lists of tables that grow (newest first), built without blocking writes."""

from django.db import migrations, models

from agents.migration_operations import AddIndexOnline


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY on PostgreSQL

    dependencies = [
        ('agents', '0013_admin_list_indexes'),
        ('inbox', '0006_webhook_refusals_and_ignored_reason'),
    ]

    operations = [
        AddIndexOnline(
            model_name='notificationrecord',
            index=models.Index(fields=['-created_at'], name='notif_created'),
        ),
    ]
