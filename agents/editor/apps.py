"""``agents.editor.apps.MastraAdminConfig`` replaces ``django.contrib.admin`` in INSTALLED_APPS:
the same admin, whose default site shows the operator dashboard."""

from django.contrib.admin.apps import AdminConfig


class MastraAdminConfig(AdminConfig):
    default_site = "agents.editor.site.MastraAdminSite"
