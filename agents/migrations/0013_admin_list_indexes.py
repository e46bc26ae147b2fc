"""Indexes for the admin's lists of tables that grow (newest first), built without blocking writes."""

from django.db import migrations, models

from agents.migration_operations import AddIndexOnline


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY on PostgreSQL

    dependencies = [
        ('agents', '0012_agent_model_edit_permission'),
    ]

    operations = [
        AddIndexOnline(
            model_name='run',
            index=models.Index(fields=['-started_at'], name='run_started'),
        ),
        AddIndexOnline(
            model_name='run',
            index=models.Index(fields=['status', '-started_at'], name='run_status_started'),
        ),
        AddIndexOnline(
            model_name='score',
            index=models.Index(fields=['-created_at'], name='score_created'),
        ),
        AddIndexOnline(
            model_name='thread',
            index=models.Index(fields=['-updated_at'], name='thread_updated'),
        ),
        AddIndexOnline(
            model_name='tracespan',
            index=models.Index(fields=['started_at'], name='trace_span_started'),
        ),
    ]
