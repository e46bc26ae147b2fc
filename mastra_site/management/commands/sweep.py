"""``manage.py sweep [--dry-run]``: delete the expired rows of every table now (docs/operations.md)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from mastra_site.sweeper import sweep_run


class Command(BaseCommand):
    help = ("Delete the rows past their retention (MASTRA_RETENTION_DAYS) in small batches and print how many "
            "per table; --dry-run prints how many it would delete and deletes nothing.")

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="count the expired rows, delete nothing")

    def handle(self, *args, dry_run: bool, **options):
        report = sweep_run(dry_run=dry_run)
        if report.skipped:
            raise CommandError("another sweep is running (it holds the sweep lock): nothing done")
        verb = "would delete" if dry_run else "deleted"
        for outcome in report.outcomes:
            kept = "kept forever" if outcome.days == 0 else f"older than {outcome.days} days"
            self.stdout.write(f"{outcome.table}: {verb} {outcome.rows} ({outcome.setting}, {kept})")
        self.stdout.write(f"total: {verb} {report.rows}")
