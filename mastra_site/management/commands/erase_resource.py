"""``manage.py erase_resource <resource_id>``: erase everything the site holds about a resource
(docs/operations.md#erasure)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from mastra_site.exceptions import ErasureRefused
from mastra_site.resource_erasure import resource_erase


class Command(BaseCommand):
    help = ("Delete (or anonymise) every row the site holds about a resource, anonymise its user account, and "
            "record the erasure with the resource id only as a salted hash. Asks for confirmation unless --yes.")

    def add_arguments(self, parser):
        parser.add_argument("resource_id")
        parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")
        parser.add_argument("--keep-account", action="store_true",
                            help="leave the user account whose username is the resource id as it is")

    def handle(self, *args, resource_id: str, yes: bool, keep_account: bool, **options):
        if not yes and input(f"Erase everything about {resource_id!r}? This cannot be undone. [y/N] ").strip().lower() \
                not in ("y", "yes"):
            raise CommandError("not erased")
        try:
            record = resource_erase(resource_id=resource_id, keep_account=keep_account)
        except ErasureRefused as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from None
        for label, counts in sorted(record.rows.items()):
            done = ", ".join(f"{what} {n}" for what, n in sorted(counts.items()))
            self.stdout.write(f"{label}: {done}")
        self.stdout.write(f"account: {record.account}")
        self.stdout.write(f"erasure record {record.pk} ({record.resource_hash[:16]}…)")
