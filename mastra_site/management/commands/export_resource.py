"""``manage.py export_resource <resource_id> [--output FILE]``: everything the site holds about a
resource, as one JSON document (docs/operations.md#export)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand

from mastra_site.resource_export import resource_export_json


class Command(BaseCommand):
    help = ("Write one JSON document with every row the site holds about a resource (threads, messages, inputs, "
            "runs, approvals, notification records, ...) to stdout or --output.")

    def add_arguments(self, parser):
        parser.add_argument("resource_id")
        parser.add_argument("--output", "-o", help="write to this file (created or replaced) instead of stdout")

    def handle(self, *args, resource_id: str, output: str | None, **options):
        text = resource_export_json(resource_id=resource_id)
        if output:
            Path(output).write_text(text + "\n", encoding="utf-8")
            self.stderr.write(f"exported {resource_id!r} to {output}")
        else:
            self.stdout.write(text)
