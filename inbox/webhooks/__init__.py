"""Webhooks that feed the notification inbox: GitHub and Slack deliveries, signature-checked,
turned into ``send_notification_signal`` calls on the endpoint's agent (docs/api.md)."""
