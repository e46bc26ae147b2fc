"""The HTTP API: Mastra's server routes under ``/api/`` (so that ``@mastra/client-js`` works
unchanged), thread signals, memory and the notification inbox (DESIGN §5, docs/api.md).

Views are thin: they parse the body (:mod:`.parsing`), ask :class:`agents.access.Caller` who may act
on which thread, call the same agent methods the Python API has, and render (:mod:`.sse` for
streams, :mod:`.errors` for every error)."""
