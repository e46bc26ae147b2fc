"""What a webhook endpoint may be configured with, checked when it is saved rather than at each
delivery: the agents that can take notifications, the owners (users), the thread template and the
priority rules (``inbox.endpoint_rules``); and the URL a sender posts to.

Every check returns a message for the operator (or ``""``); the admin's form shows it on the field.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.urls import reverse

from agents.access import resource_for_user
from agents.registry import get_mastra

from ..endpoint_rules import PRIORITIES, TEMPLATE_FIELDS, priority_rules_problem, thread_template_problem


def endpoint_agents() -> dict[str, str]:
    """``{agent id: label}`` of the site's agents that can take notifications (those with memory:
    a notification goes to a thread), sorted by id."""
    agents = get_mastra().get_agents()
    return {agent_id: f"{agent.name} ({agent_id})" for agent_id, agent in sorted(agents.items())
            if agent.memory is not None}


def agent_problem(agent_id: str) -> str:
    if agent_id in endpoint_agents():
        return ""
    agent = get_mastra().get_agents().get(agent_id)
    if agent is not None:
        return f"Agent {agent_id!r} has no memory: it cannot take notifications (they go to a thread)."
    return f"Unknown agent {agent_id!r}: choose one of the site's agents."


def endpoint_owners() -> list[str]:
    """The resource ids of the active users (a notification's thread belongs to one), sorted."""
    users = get_user_model().objects.filter(is_active=True).order_by(get_user_model().USERNAME_FIELD)
    return [resource_for_user(user) for user in users]


def owner_problem(resource_id: str) -> str:
    if resource_id in endpoint_owners():
        return ""
    return f"Unknown owner {resource_id!r}: choose an active user (the threads and notifications are theirs)."


def endpoint_path(*, source: str, name: str) -> str:
    """The path a sender posts to (``/api/webhooks/github/<name>``)."""
    return reverse(f"webhook-{source}", args=[name])


def endpoint_url(request, *, source: str, name: str) -> str:
    """The full URL to paste into GitHub or Slack, as the site is reached by ``request``: its
    scheme (``https`` behind a proxy that sets ``SECURE_PROXY_SSL_HEADER``), its host
    (``ALLOWED_HOSTS`` checked; ``USE_X_FORWARDED_HOST`` respected) and any script prefix."""
    return request.build_absolute_uri(endpoint_path(source=source, name=name))


__all__ = ["PRIORITIES", "TEMPLATE_FIELDS", "agent_problem", "endpoint_agents", "endpoint_owners", "endpoint_path",
           "endpoint_url", "owner_problem", "priority_rules_problem", "thread_template_problem"]
