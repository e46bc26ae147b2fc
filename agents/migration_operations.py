"""Migration operations that keep the site writable while they run (``docs/deployment.md``: upgrades
apply migrations with the old processes still serving)."""

from __future__ import annotations

from django.contrib.postgres.operations import AddIndexConcurrently


class AddIndexOnline(AddIndexConcurrently):
    """``CREATE INDEX CONCURRENTLY`` on PostgreSQL (writes to the table go on while it builds); a
    plain ``CREATE INDEX`` elsewhere (SQLite has no concurrent build). The migration holding it sets
    ``atomic = False``."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            return super().database_forwards(app_label, schema_editor, from_state, to_state)
        model = to_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            schema_editor.add_index(model, self.index)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            return super().database_backwards(app_label, schema_editor, from_state, to_state)
        model = from_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            schema_editor.remove_index(model, self.index)
