"""Indexes for the admin's lists of tables that grow (newest first), built without blocking writes."""

from django.db import migrations, models

from mastra_site.migration_operations import AddIndexOnline


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY on PostgreSQL

    dependencies = [
        ('agents', '0012_admin_list_indexes'),
        ('inbox', '0005_webhook_event_key'),
    ]

    operations = [
        AddIndexOnline(
            model_name='notificationrecord',
            index=models.Index(fields=['-created_at'], name='notif_created'),
        ),
    ]
