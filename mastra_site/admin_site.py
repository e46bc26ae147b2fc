"""The site's admin: Django's, whose front page is the operator dashboard (:mod:`mastra_site.dashboard`).

``mastra_site.apps.MastraAdminConfig`` replaces ``django.contrib.admin`` in INSTALLED_APPS; its
default site is :class:`MastraAdminSite`. The dashboard spans the agents app and the inbox, so it
lives here, above both."""

from __future__ import annotations

from django.contrib import admin

from mastra_site.dashboard import dashboard_build


class MastraAdminSite(admin.AdminSite):
    site_header = "Mastra administration"
    site_title = "Mastra admin"
    index_title = "Operations"
    index_template = "admin/mastra_index.html"

    def index(self, request, extra_context=None):
        context = {"dashboard": dashboard_build()}
        context.update(extra_context or {})
        return super().index(request, context)
