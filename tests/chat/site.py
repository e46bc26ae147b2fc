"""A Mastra for the chat tests (``MASTRA=tests.chat.site:mastra``): the offline echo model, a tool
that needs approval and a tool that files an urgent notification into the thread; an agent that
forgets (no history: the echo model then names its tool calls alike in every run), an agent whose
model always fails, one that answers in markdown (a table, a code block), and one without memory.

``MASTRA_TEST_ECHO_DELAY_MS`` slows the echo (per streamed piece) so that a browser can watch a
run stream, stop it, reload in the middle of it. ``MASTRA_TEST_VOICE`` gives the chat bot a voice:
``local`` (the offline ``LocalVoice``, hearing ``MASTRA_TEST_VOICE_TRANSCRIPT`` when set) or ``openai``
(``OpenAIVoice``, at ``OPENAI_BASE_URL``: a local fake in the tests).
"""

from __future__ import annotations

import os

from agents.memory import Memory
from agents.runtime import Agent, CompositeVoice, LocalVoice, Mastra, OpenAIVoice, create_tool
from agents.runtime.errors import ModelError
from agents.runtime.providers.base import usage

DELETED: list[dict] = []


def delete_file(input: dict) -> dict:
    DELETED.append(input)
    return {"deleted": input.get("path")}


async def notify(input: dict, context) -> dict:
    """File an urgent notification into the run's thread (delivered into the run at once)."""
    await context.agent.send_notification_signal(
        {"source": input.get("source", "github"), "kind": "ci-status", "priority": "urgent",
         "summary": input.get("summary", "CI failed")},
        resource_id=context.resource_id, thread_id=context.thread_id)
    return {"notified": True}


def ping(input: dict) -> dict:
    return {"pong": input.get("n", 0)}


class UnreachableModel:
    """A model whose provider is always down."""

    provider = "test"
    model_id = "unreachable"

    async def stream(self, request):
        raise ModelError("the provider answered 503: overloaded", code="model_unavailable")
        yield  # pragma: no cover (an async generator that fails at once)


#: what the markdown model answers, whatever it is asked
MARKDOWN_ANSWER = """Here is the **status**:

| service | state | p99 |
| :--- | :---: | ---: |
| api | up | 120 ms |
| billing | `down` | — |

```python
def restart(name):
    return f"restarting {name}"
```

Done."""


class MarkdownModel:
    """A model that answers :data:`MARKDOWN_ANSWER` (11 input tokens, 26 output tokens)."""

    provider = "test"
    model_id = "markdown"

    async def stream(self, request):
        yield {"type": "response-metadata", "id": "markdown-response", "model_id": self.model_id,
               "timestamp": None, "headers": {}}
        for piece in MARKDOWN_ANSWER.split("\n\n"):
            yield {"type": "text-delta", "text": piece + ("\n\n" if not piece.startswith("Done") else "")}
        yield {"type": "finish", "finish_reason": "stop", "usage": usage(11, 26)}


delete_tool = create_tool(id="delete-file", description="Delete a file (needs an operator's approval).",
                          execute=delete_file, require_approval=True)
notify_tool = create_tool(id="notify", description="File a notification into this thread.", execute=notify)
ping_tool = create_tool(id="ping", description="Answer pong.", execute=ping)
EXAMPLES = ['/tool delete-file {"path": "/tmp/x"}', "Hello there"]


def voice_from_env():
    kind = os.environ.get("MASTRA_TEST_VOICE", "")
    if kind == "local":
        return CompositeVoice(input=LocalVoice(transcript=os.environ.get("MASTRA_TEST_VOICE_TRANSCRIPT")),
                              output=LocalVoice())
    if kind == "openai":
        return CompositeVoice(input=OpenAIVoice(), output=OpenAIVoice())
    return None


def build_agents(*, model=None, caller_models=None, voice=None) -> dict[str, Agent]:
    delay = int(os.environ.get("MASTRA_TEST_ECHO_DELAY_MS", "0"))
    chunk = int(os.environ.get("MASTRA_TEST_ECHO_CHUNK", "0"))
    bot = Agent(id="chat-bot", name="Chat Bot", description="Echoes what it is told.",
                instructions="You are a test agent.",
                model=model if model is not None else {"id": "local/echo", "delay_ms": delay, "chunk_size": chunk},
                tools={"delete-file": delete_tool, "notify": notify_tool}, memory=Memory(), caller_models=caller_models,
                voice=voice if voice is not None else voice_from_env(),
                metadata={"examples": EXAMPLES})
    helper = Agent(id="helper", name="Another Helper", instructions="You help.", model="local/echo", memory=Memory())
    plain = Agent(id="no-memory", name="No Memory", instructions="Stateless.", model="local/echo")
    forgetful = Agent(id="forgetful", name="Forgetful", instructions="You forget.", model="local/echo",
                      tools={"ping": ping_tool}, memory=Memory(last_messages=0))
    broken = Agent(id="broken", name="Broken", instructions="You fail.", model=UnreachableModel(), memory=Memory())
    writer = Agent(id="writer", name="Markdown Writer", description="Answers with a table and some code.",
                   instructions="You write markdown.", model=MarkdownModel(), memory=Memory())
    return {"chat-bot": bot, "helper": helper, "no-memory": plain, "forgetful": forgetful, "broken": broken,
            "writer": writer}


mastra = Mastra(agents=build_agents())
