"""One identity for a thread: the ``Thread`` row.

Leases, inputs, events and runs point at it with foreign keys instead of the composite
``resource + "\\x1f" + thread`` key or a bare thread id. The lease, input and event tables are
rebuilt (their runtime state is reset: run it with no thread active); runs keep their rows and lose
their link to a thread.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("agents", "0001_initial"),
    ]

    operations = [
        migrations.DeleteModel(name="ThreadEvent"),
        migrations.DeleteModel(name="ThreadInput"),
        migrations.DeleteModel(name="ThreadLease"),
        migrations.RemoveField(model_name="run", name="resource_id"),
        migrations.RemoveField(model_name="run", name="thread_id"),
        migrations.AddField(
            model_name="run",
            name="thread",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE,
                                    related_name="runs", to="agents.thread"),
        ),
        migrations.CreateModel(
            name="ThreadLease",
            fields=[
                ("thread", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True,
                                                related_name="lease", serialize=False, to="agents.thread")),
                ("agent_id", models.CharField(blank=True, default="", max_length=255)),
                ("owner_run_id", models.CharField(blank=True, db_index=True, max_length=64, null=True)),
                ("owner_process", models.CharField(blank=True, default="", max_length=128)),
                ("status", models.CharField(choices=[("idle", "Idle"), ("running", "Running"),
                                                     ("suspended", "Suspended")], default="idle", max_length=16)),
                ("token", models.BigIntegerField(default=0)),
                ("expires_at", models.DateTimeField(blank=True, db_index=True, null=True)),
                ("abort_requested", models.BooleanField(default=False)),
                ("last_seq", models.BigIntegerField(default=0)),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
        ),
        migrations.CreateModel(
            name="ThreadInput",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("input_id", models.CharField(max_length=64, unique=True)),
                ("thread", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="inputs",
                                             to="agents.thread")),
                ("agent_id", models.CharField(max_length=255)),
                ("kind", models.CharField(choices=[("deliver", "Deliver"), ("queue", "Queue"), ("echo", "Echo")],
                                          max_length=16)),
                ("status", models.CharField(choices=[("pending", "Pending"), ("consumed", "Consumed"),
                                                     ("cancelled", "Cancelled"), ("failed", "Failed")],
                                            default="pending", max_length=16)),
                ("signal", models.JSONField()),
                ("run_id", models.CharField(blank=True, max_length=64, null=True)),
                ("consumed_by", models.CharField(blank=True, max_length=64, null=True)),
                ("stream_options", models.JSONField(blank=True, default=dict)),
                ("attempts", models.PositiveSmallIntegerField(default=0)),
                ("last_error", models.TextField(blank=True, default="")),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("consumed_at", models.DateTimeField(blank=True, null=True)),
            ],
            options={
                "ordering": ["id"],
                "indexes": [models.Index(fields=["thread", "status", "id"], name="thread_input_waiting")],
            },
        ),
        migrations.CreateModel(
            name="ThreadEvent",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("thread", models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                             related_name="events", to="agents.thread")),
                ("seq", models.BigIntegerField()),
                ("run_id", models.CharField(blank=True, default="", max_length=64)),
                ("chunk", models.JSONField()),
                ("created_at", models.DateTimeField(auto_now_add=True)),
            ],
            options={
                "ordering": ["thread", "seq"],
                "indexes": [models.Index(fields=["thread", "run_id", "seq"], name="thread_event_run")],
                "constraints": [models.UniqueConstraint(fields=("thread", "seq"), name="thread_event_seq")],
            },
        ),
    ]
