"""Threads are identified by (resource id, thread id).

The thread row's primary key becomes the runtime's thread key (resource id, ``\\x1f``, thread id)
and the id callers name moves to ``thread_id``, unique within its resource. Every foreign key to a
thread (messages, runs, leases, inputs, events, notification records) is rewritten to the key in
the same transaction. Runs get the resource they belong to.
"""

from django.db import migrations, models

SEPARATOR = "\x1f"
CHILDREN = (("agents", "Message"), ("agents", "Run"), ("agents", "ThreadLease"), ("agents", "ThreadInput"),
            ("agents", "ThreadEvent"), ("inbox", "NotificationRecord"))


def keys_forward(apps, schema_editor):
    Thread = apps.get_model("agents", "Thread")
    Run = apps.get_model("agents", "Run")
    alias = schema_editor.connection.alias
    for old_id, resource_id in list(Thread.objects.using(alias).values_list("id", "resource_id")):
        key = f"{resource_id}{SEPARATOR}{old_id}"
        Thread.objects.using(alias).filter(id=old_id).update(thread_id=old_id)
        Run.objects.using(alias).filter(thread_id=old_id).update(resource_id=resource_id)
        for app_label, name in CHILDREN:
            apps.get_model(app_label, name).objects.using(alias).filter(thread_id=old_id).update(thread_id=key)
        Thread.objects.using(alias).filter(id=old_id).update(id=key)


def keys_backward(apps, schema_editor):
    Thread = apps.get_model("agents", "Thread")
    alias = schema_editor.connection.alias
    for key, thread_id in list(Thread.objects.using(alias).values_list("key", "thread_id")):
        for app_label, name in CHILDREN:
            apps.get_model(app_label, name).objects.using(alias).filter(thread_id=key).update(thread_id=thread_id)
        Thread.objects.using(alias).filter(key=key).update(key=thread_id)


def constraints_immediate(apps, schema_editor):
    """PostgreSQL refuses to alter a table with pending (deferred) foreign key checks: run them now."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


class Migration(migrations.Migration):

    dependencies = [
        ("agents", "0006_threadlease_reserved_seq"),
        ("inbox", "0005_webhook_event_key"),
    ]

    operations = [
        migrations.AddField(model_name="thread", name="thread_id",
                            field=models.CharField(default="", max_length=255), preserve_default=False),
        migrations.AddField(model_name="run", name="resource_id",
                            field=models.CharField(blank=True, db_index=True, default="", max_length=255)),
        migrations.AlterField(model_name="thread", name="id",
                              field=models.CharField(max_length=511, primary_key=True, serialize=False)),
        migrations.RunPython(keys_forward, migrations.RunPython.noop),
        migrations.RunPython(constraints_immediate, constraints_immediate),
        migrations.RenameField(model_name="thread", old_name="id", new_name="key"),
        migrations.RunPython(constraints_immediate, constraints_immediate),
        migrations.RunPython(migrations.RunPython.noop, keys_backward),
        migrations.AddConstraint(model_name="thread", constraint=models.UniqueConstraint(
            fields=("resource_id", "thread_id"), name="thread_unique_in_resource")),
        # signal ids are unique within a thread, not site-wide
        migrations.AlterField(model_name="message", name="message_id", field=models.CharField(max_length=64)),
        migrations.AddConstraint(model_name="message", constraint=models.UniqueConstraint(
            fields=("thread", "message_id"), name="message_unique_in_thread")),
        migrations.AlterField(model_name="threadinput", name="input_id", field=models.CharField(max_length=64)),
        migrations.AddConstraint(model_name="threadinput", constraint=models.UniqueConstraint(
            fields=("thread", "input_id"), name="input_unique_in_thread")),
    ]
