"""Stored messages take Mastra's format (``agents.runtime.stored_messages``).

Forward, thread by thread, in order: a signal (a ``user`` row of type ``signal`` holding the XML the
model saw) becomes a ``signal`` row whose parts are its contents, its attributes in the order the
XML shows them (kept in the row's ``metadata`` as ``attributeOrder``); every other content becomes
``{"format": 2, "parts", ...}``; a ``tool`` row's results join the assistant row that made the calls
and the ``tool`` row goes. Backward restores the old shape (the XML rendered again, a ``tool`` row
after each assistant row whose calls have results); the thread's rows are written again in order.
"""

from datetime import datetime

from django.db import migrations

MESSAGE_ID_MAX = 64


def _old_message(row) -> dict:
    message = {"id": row.message_id, "role": row.role, "content": row.content,
               "createdAt": row.created_at.isoformat()}
    if row.type:
        message["type"] = row.type
    if row.metadata:  # a signal's attributes take the order of the XML ``content`` holds when converted
        message["metadata"] = row.metadata
    return message


def _threads(apps, alias):
    Message = apps.get_model("agents", "Message")
    keys = Message.objects.using(alias).values_list("thread_id", flat=True).distinct()
    for key in list(keys):
        yield key, list(Message.objects.using(alias).filter(thread_id=key).order_by("id"))


def messages_forward(apps, schema_editor):
    from agents.models import message_bookkeeping
    from agents.runtime.stored_messages import is_stored, to_stored_messages

    Message = apps.get_model("agents", "Message")
    alias = schema_editor.connection.alias
    for _key, rows in _threads(apps, alias):
        if all(is_stored({"content": r.content}) for r in rows):
            continue
        stored = {m["id"]: m for m in to_stored_messages([_old_message(r) for r in rows])}
        for row in rows:
            message = stored.get(row.message_id)
            if message is None:  # a tool row: its results are on the assistant row now
                Message.objects.using(alias).filter(pk=row.pk).delete()
                continue
            row.role, row.type, row.content = message["role"], message.get("type") or "", message["content"]
            row.metadata = message_bookkeeping(message)
            row.save(update_fields=["role", "type", "content", "metadata"])


def messages_backward(apps, schema_editor):
    from agents.models import message_content_ordered
    from agents.runtime.stored_messages import is_stored, to_model_messages

    Message = apps.get_model("agents", "Message")
    alias = schema_editor.connection.alias
    for key, rows in _threads(apps, alias):
        if not any(is_stored({"content": r.content}) for r in rows):
            continue  # in the old shape already
        created = {r.message_id: r.created_at for r in rows}
        resource = {r.message_id: r.resource_id for r in rows}
        stored = [{"id": r.message_id, "role": r.role, "type": r.type or None,
                   "content": message_content_ordered(r.content, r.metadata), "createdAt": r.created_at.isoformat(),
                   # a row still in the old shape keeps its metadata
                   **({} if is_stored({"content": r.content}) else {"metadata": r.metadata})}
                  for r in rows]
        old = to_model_messages(stored)
        Message.objects.using(alias).filter(thread_id=key).delete()
        for message in old:
            source = message["id"] if message["id"] in created else message["id"].rsplit("-results", 1)[0]
            Message.objects.using(alias).create(
                message_id=message["id"][:MESSAGE_ID_MAX], thread_id=key, resource_id=resource.get(source, ""),
                role=message["role"], type=message.get("type") or "", content=message["content"],
                metadata=message.get("metadata") or {},
                created_at=created.get(source) or datetime.fromisoformat(message["createdAt"]))


class Migration(migrations.Migration):

    dependencies = [
        ("agents", "0008_thread_saved"),
    ]

    operations = [
        migrations.RunPython(messages_forward, messages_backward),
    ]
