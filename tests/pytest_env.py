"""Environment of a test run, set before Django reads its settings (loaded with ``-p``).

One Redis channel prefix per run: concurrent runs on one machine must not hear each other's
threads (nor share rate counters: the cache's key prefix follows it); worker processes started by
the tests inherit it.
"""

import os

os.environ.setdefault("MASTRA_CHANNEL_PREFIX", f"mastra-test-{os.getpid()}")
