"""The single-column indexes that a composite index or a unique constraint beginning with the same
column already serves: every write paid for them and no query needed them (``Thread.resource_id``,
``Message.thread``, ``ThreadInput.thread``; on PostgreSQL their ``_like`` twins too). Dropped in
place, without blocking writes (docs/deployment.md)."""

import django.db.models.deletion
from django.db import migrations, models

from agents.migration_operations import DropFieldIndexOnline


class Migration(migrations.Migration):
    atomic = False  # DROP INDEX CONCURRENTLY on PostgreSQL

    dependencies = [
        ('agents', '0013_admin_list_indexes'),
    ]

    operations = [
        DropFieldIndexOnline(
            model_name='message',
            name='thread',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='messages', to='agents.thread'),
        ),
        DropFieldIndexOnline(
            model_name='thread',
            name='resource_id',
            field=models.CharField(max_length=255),
        ),
        DropFieldIndexOnline(
            model_name='threadinput',
            name='thread',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='inputs', to='agents.thread'),
        ),
    ]
