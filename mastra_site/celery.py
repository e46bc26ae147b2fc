"""Celery application. Without a broker (embedded default) tasks run eagerly in process."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mastra_site.settings")

app = Celery("mastra_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
