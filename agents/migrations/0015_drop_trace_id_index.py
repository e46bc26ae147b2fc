"""``TraceSpan.trace_id``'s own index: the unique constraint on ``(trace_id, span_id)`` already
serves every lookup of a trace, and each span written (two or more per run) paid for both (on
PostgreSQL three: the ``_like`` twin too). Dropped in place, without blocking writes
(docs/deployment.md)."""

from django.db import migrations, models

from agents.migration_operations import DropFieldIndexOnline


class Migration(migrations.Migration):
    atomic = False  # DROP INDEX CONCURRENTLY on PostgreSQL

    dependencies = [
        ('agents', '0014_drop_covered_indexes'),
    ]

    operations = [
        DropFieldIndexOnline(
            model_name='tracespan',
            name='trace_id',
            field=models.CharField(max_length=32),
        ),
    ]
