"""The chat websocket's session and user: Channels' ``AuthMiddlewareStack``, without a wrapper
around each frame the socket sends.

Channels' ``SessionMiddleware`` hands the application a ``send`` of its own, which saves a
modified session and sets its cookie when an ``http.response.start`` goes out. A websocket never
sends one, yet every frame it sends went through that wrapper, which reads the lazy session twice
to decide to do nothing: about 5 % of a web process's time while it fans chunks out to a thousand
sockets (``bench/websocket.py``). :class:`WebsocketSessionMiddleware` resolves the session as
Channels does and gives a websocket the server's own ``send``; any other connection keeps
Channels' wrapper, and with it the session's save and cookie.
"""

from __future__ import annotations

from channels.auth import AuthMiddleware
from channels.sessions import CookieMiddleware, InstanceSessionWrapper, SessionMiddleware


class WebsocketSessionMiddleware(SessionMiddleware):
    """``SessionMiddleware`` whose websockets send through the server's ``send`` (module docstring)."""

    async def __call__(self, scope, receive, send):
        wrapper = InstanceSessionWrapper(scope, send)
        await wrapper.resolve_session()
        return await self.inner(wrapper.scope, receive, send if scope["type"] == "websocket" else wrapper.send)


def SessionAuthStack(inner):  # noqa: N802 - named as Channels names its stacks
    """Channels' ``AuthMiddlewareStack`` (cookies, session, user) with :class:`WebsocketSessionMiddleware`."""
    return CookieMiddleware(WebsocketSessionMiddleware(AuthMiddleware(inner)))


__all__ = ["SessionAuthStack", "WebsocketSessionMiddleware"]
