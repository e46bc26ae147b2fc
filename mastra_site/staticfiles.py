"""The static files' storage (README, Static files): ``manage.py collectstatic`` writes each file
under a name with a hash of its content (``chat/chat.3f1a9c0e52b7.css``) and its compressed copies
into ``STATIC_ROOT``, and WhiteNoise (``settings.MIDDLEWARE``) serves them from the ASGI application
with a year's ``Cache-Control`` (a new content is a new name).

Until ``collectstatic`` has written its manifest (``runserver``, the tests: Django's test runner
turns ``DEBUG`` off) pages name the files as they are, which ``runserver`` serves from the apps'
``static/`` folders, instead of failing on every ``{% static %}``.
"""

from __future__ import annotations

from whitenoise.storage import CompressedManifestStaticFilesStorage


class StaticFilesStorage(CompressedManifestStaticFilesStorage):
    def stored_name(self, name):
        if not self.hashed_files:  # no manifest: collectstatic has not run here
            return name
        return super().stored_name(name)
