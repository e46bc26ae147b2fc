"""Webhook deliveries are also unique per event (``event_key``, read from the signed body).

Deliveries received before get ``delivery:<their delivery id>`` as their key (unique per endpoint,
as their delivery id is): their events were not named, so a replay of one of them is refused by its
delivery id only."""

import hashlib

from django.db import migrations, models


def name_old_deliveries(apps, schema_editor):
    WebhookDelivery = apps.get_model("inbox", "WebhookDelivery")
    for delivery in WebhookDelivery.objects.filter(event_key="").only("pk", "delivery_id").iterator():
        key = f"delivery:{delivery.delivery_id}"
        if len(key) > 255:
            key = "sha256:" + hashlib.sha256(key.encode()).hexdigest()
        WebhookDelivery.objects.filter(pk=delivery.pk).update(event_key=key)


class Migration(migrations.Migration):

    dependencies = [
        ("inbox", "0004_webhook_delivery_plural"),
    ]

    operations = [
        migrations.AddField(
            model_name="webhookdelivery",
            name="event_key",
            field=models.CharField(default="", max_length=255),
            preserve_default=False,
        ),
        migrations.RunPython(name_old_deliveries, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="webhookdelivery",
            constraint=models.UniqueConstraint(fields=("endpoint", "event_key"), name="webhook_event_once"),
        ),
    ]
