"""Site-wide views that belong to no app."""

from __future__ import annotations

from django.http import HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.views.decorators.http import require_safe


@require_safe
def favicon(request):
    """Browsers ask for ``/favicon.ico`` whatever a page links: the site's icon, a static file (its
    hashed name, read at request time: the manifest exists once ``collectstatic`` ran)."""
    return HttpResponsePermanentRedirect(static("favicon.svg"))
