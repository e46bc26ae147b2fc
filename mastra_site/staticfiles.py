"""The static files' storage (README, Static files): ``manage.py collectstatic`` writes each file
under a name with a hash of its content (``chat/chat.3f1a9c0e52b7.css``) and its compressed copies
into ``STATIC_ROOT``, and WhiteNoise (:class:`StaticFilesMiddleware` in ``settings.MIDDLEWARE``) serves them from the ASGI application
with a year's ``Cache-Control`` (a new content is a new name). A JavaScript module's relative
imports are rewritten to the hashed names, so a module that changes changes the names of the
modules that load it as well.

Until ``collectstatic`` has written its manifest (``runserver``, the tests: Django's test runner
turns ``DEBUG`` off) pages name the files as they are, which ``runserver`` serves from the apps'
``static/`` folders, instead of failing on every ``{% static %}``.
"""

from __future__ import annotations

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from whitenoise.middleware import WhiteNoiseMiddleware
from whitenoise.storage import CompressedManifestStaticFilesStorage


class StaticFilesStorage(CompressedManifestStaticFilesStorage):
    #: rewrite ``import ... from "./x.js";`` (and ``export ... from``, ``import("./x.js")``) in
    #: JavaScript to the hashed names: the chat page's ES modules name each other by relative path,
    #: and the hashed entry module must load the hashed modules (each cached for a year), never the
    #: plain names
    support_js_module_import_aggregation = True

    def stored_name(self, name):
        if not self.hashed_files:  # no manifest: collectstatic has not run here
            return name
        return super().stored_name(name)


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """WhiteNoise's middleware, usable on both of Django's paths. WhiteNoise's own is sync only: in
    ``settings.MIDDLEWARE`` it would turn every request of the ASGI application into a sync one
    (a worker-thread hop each), and a task a view starts would inherit that request's thread
    executor, dead once the request ends. A static file is served at once (opening it is the only
    blocking call); any other request goes on down the async chain."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        super().__init__(get_response)
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request):
        if not iscoroutinefunction(self):
            return super().__call__(request)
        return self.__acall__(request)

    async def __acall__(self, request):
        static_file = self.find_file(request.path_info) if self.autorefresh else self.files.get(request.path_info)
        if static_file is not None:
            return self.serve(static_file, request)
        return await self.get_response(request)
