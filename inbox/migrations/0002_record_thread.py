"""A notification record points at its ``Thread`` row (a foreign key instead of a bare thread id).
The records are reset: the table is emptied before the column changes."""

import django.db.models.deletion
from django.db import migrations, models


def records_reset(apps, schema_editor):
    apps.get_model("inbox", "NotificationRecord").objects.all().delete()


class Migration(migrations.Migration):

    dependencies = [
        ("agents", "0002_thread_identity"),
        ("inbox", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(records_reset, migrations.RunPython.noop),
        migrations.RemoveIndex(model_name="notificationrecord", name="notif_pending_thread"),
        migrations.RemoveIndex(model_name="notificationrecord", name="notif_thread_status"),
        migrations.RemoveField(model_name="notificationrecord", name="thread_id"),
        migrations.AddField(
            model_name="notificationrecord",
            name="thread",
            field=models.ForeignKey(default="", on_delete=django.db.models.deletion.CASCADE,
                                    related_name="notifications", to="agents.thread"),
            preserve_default=False,
        ),
        migrations.AddIndex(
            model_name="notificationrecord",
            index=models.Index(condition=models.Q(("status", "pending")), fields=["resource_id", "thread", "source", "kind"],
                               name="notif_pending_thread"),
        ),
        migrations.AddIndex(
            model_name="notificationrecord",
            index=models.Index(fields=["resource_id", "thread", "status", "-created_at"], name="notif_thread_status"),
        ),
    ]
