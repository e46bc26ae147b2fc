"""Celery tasks of the site (thin: each calls one service)."""

from __future__ import annotations

import logging

from celery import shared_task

from .sweeper import sweep_run

logger = logging.getLogger(__name__)


@shared_task(name="mastra_site.sweep_retention", ignore_result=True)
def sweep_retention_task() -> dict:
    """Delete the expired rows of every table (Celery beat runs it every ``MASTRA_SWEEP_INTERVAL_S``)."""
    try:
        return sweep_run().to_dict()
    except Exception:
        logger.exception("retention sweep task failed")
        raise
