"""Migration operations that keep the site writable while they run (``docs/deployment.md``: upgrades
apply migrations with the old processes still serving)."""

from __future__ import annotations

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations


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


class DropFieldIndexOnline(migrations.AlterField):
    """``AlterField`` to a field whose own index goes (``db_index=False``), dropping that index where
    it stands: ``DROP INDEX CONCURRENTLY`` on PostgreSQL (writes to the table go on; a ``varchar``'s
    ``_like`` index goes too), a plain ``DROP INDEX`` elsewhere, where ``AlterField`` would copy
    the whole table into a new one on SQLite. The indexes dropped are the single-column, non-unique
    ones on the field's column that the model's ``Meta.indexes`` do not name. Backwards it is
    ``AlterField``'s (the index is built again). The migration holding it sets ``atomic = False``."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        model = to_state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(schema_editor.connection.alias, model):
            return
        column = model._meta.get_field(self.name).column
        kept = {index.name for index in model._meta.indexes}
        connection = schema_editor.connection
        with connection.cursor() as cursor:
            constraints = connection.introspection.get_constraints(cursor, model._meta.db_table)
        concurrently = "CONCURRENTLY " if connection.vendor == "postgresql" else ""
        for name, info in sorted(constraints.items()):
            if (info["index"] and not info["unique"] and not info["primary_key"] and info["columns"] == [column]
                    and name not in kept):
                schema_editor.execute(f"DROP INDEX {concurrently}IF EXISTS {schema_editor.quote_name(name)}")

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        # AlterField's backwards is its forwards between the states swapped: the index built again
        super().database_forwards(app_label, schema_editor, from_state, to_state)
