"""The site's routes plus one that fails, for the error page tests."""

from django.urls import path

from mastra_site.urls import urlpatterns as site


def broken(request):
    raise RuntimeError("a bug")


urlpatterns = [path("broken/", broken), *site]
