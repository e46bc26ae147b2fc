"""The arguments autobahn formats for its debug log lines, made plain.

Daphne speaks websocket through autobahn, whose protocol builds the arguments of a debug log line
for every frame it sends, whether debug logging is on or not (``sendData`` calls ``hltype`` and
``hlval``, which colour their text with click before the logger decides to drop the line).
Measured with ``bench/websocket.py --cases redis`` (1,000 sockets, 20,000 frames a second over two
processes): 6 % of a daphne process's time went to those colours. :func:`plain_autobahn_log_arguments`
gives autobahn's websocket protocol module plain versions of the two (the same words, no terminal
colours); what autobahn logs when its debug lines are on says the same. It runs when the ASGI
application is built (``mastra_site.asgi``); with an autobahn that no longer has the two names, it
leaves the module alone.
"""

from __future__ import annotations

from typing import Any


def plain_type(obj: Any) -> str:
    """``hltype``'s words (``<module.qualname>`` of a function or method) without colours."""
    name = getattr(obj, "__qualname__", None)
    return f"<{getattr(obj, '__module__', '')}.{name}>" if name else "<unknown>"


def plain_value(value: Any, color: str = "white", bold: bool = True) -> str:
    """``hlval``'s words (the value as text) without colours."""
    return f"{value}"


def plain_autobahn_log_arguments() -> bool:
    """Replace the two helpers in autobahn's websocket protocol module; True when it did."""
    try:
        from autobahn.websocket import protocol
    except ImportError:
        return False
    if not (callable(getattr(protocol, "hltype", None)) and callable(getattr(protocol, "hlval", None))):
        return False
    protocol.hltype = plain_type
    protocol.hlval = plain_value
    return True


__all__ = ["plain_autobahn_log_arguments", "plain_type", "plain_value"]
