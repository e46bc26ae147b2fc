import pytest

from agents.editor.overrides import published_cache


@pytest.fixture(autouse=True)
def fresh_overrides_cache():
    """Each test starts with an empty cache (the database under it is rolled back between tests)."""
    published_cache.reset()
    yield
    published_cache.reset()


@pytest.fixture
def editor_site(db):
    """The editor test site, synced into the database."""
    from agents.editor.sync import agents_sync
    from tests.editor.editor_agents import mastra

    agents_sync(mastra=mastra)
    return mastra
