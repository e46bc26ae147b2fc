"""The test run hashes passwords with a fast hasher (``tests/settings.py``); the site's settings keep
Django's own."""

from django.conf import settings
from django.contrib.auth.hashers import make_password


def test_the_test_run_hashes_passwords_fast():
    assert settings.SETTINGS_MODULE == "tests.settings"
    assert settings.PASSWORD_HASHERS == ["django.contrib.auth.hashers.MD5PasswordHasher"]
    assert make_password("pw").startswith("md5$")


def test_the_sites_settings_keep_djangos_hashers():
    import mastra_site.settings as site

    assert not hasattr(site, "PASSWORD_HASHERS")  # Django's default: PBKDF2 first
