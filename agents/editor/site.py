"""The admin site of mastra-django: Django's, with the operator dashboard as its front page."""

from __future__ import annotations

from django.contrib import admin

from agents.editor.dashboard import dashboard_build


class MastraAdminSite(admin.AdminSite):
    site_header = "Mastra administration"
    site_title = "Mastra admin"
    index_title = "Operations"
    index_template = "admin/mastra_index.html"

    def index(self, request, extra_context=None):
        context = {"dashboard": dashboard_build()}
        context.update(extra_context or {})
        return super().index(request, context)
