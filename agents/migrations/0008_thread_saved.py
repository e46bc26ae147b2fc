"""A thread row may exist before the thread does: the anchor of inputs persisted on a thread nobody
created yet (``Thread.saved`` False), as Mastra stores such inputs without a thread."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("agents", "0007_thread_resource_key")]

    operations = [
        migrations.AddField(model_name="thread", name="saved", field=models.BooleanField(default=True)),
    ]
