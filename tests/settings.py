"""The test run's settings (pyproject's ``DJANGO_SETTINGS_MODULE``): the site's own, with a fast
password hasher. Users are created by the hundred in the tests, and the production hashers are
slow on purpose. This module is not part of the installed package, so no deployment can load it by
mistake; server processes started by the tests that check the tests' passwords use it as well
(``tests/chat/browser.py``)."""

from mastra_site.settings import *  # noqa: F401,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# The cost ledger's background writer is off: its thread would write through a connection of its
# own, outside each test's transaction. tests/ledger turns it on in transactional tests.
MASTRA_LEDGER = False

# Trace spans are stored by each run's end, as the writer's thread would write outside each test's
# transaction; the tests of the background writer turn it on in transactional tests.
MASTRA_TRACE_BATCH = False
