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


@pytest.fixture
def editor_admin_site(editor_site, settings):
    """The admin serving the editor test site (``settings.MASTRA`` points at it)."""
    from agents.registry import get_mastra

    settings.MASTRA = "tests.editor.editor_agents:mastra"
    get_mastra.cache_clear()
    yield editor_site
    get_mastra.cache_clear()


def staff(username: str, *codenames: str):
    """A staff user with the ``agents`` permissions ``codenames`` (and the view permission)."""
    from django.contrib.auth.models import Permission, User

    user = User.objects.create_user(username=username, password="pw", is_staff=True)
    perms = Permission.objects.filter(content_type__app_label="agents",
                                      codename__in=("view_agentdefinition",) + codenames)
    user.user_permissions.set(perms)
    return user
