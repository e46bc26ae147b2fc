"""A site for the editor tests (``MASTRA=tests.editor.editor_agents:mastra`` in other processes):
one agent per editor lock, each answering with what it was given (its system prompt and tools)."""

from __future__ import annotations

from agents.editor.overrides import EditorOverrides
from agents.runtime import Agent, Mastra, create_tool


class ConfigEchoModel:
    """Answers ``system: <system prompt> | tools: <name>=<description>, ...`` in one text delta.
    A prompt ``/call <tool>`` makes it call that tool with ``{"prompt": "hi"}`` and then answer
    ``<tool> said: <the tool's text>``."""

    provider = "test"
    model_id = "config-echo"

    async def stream(self, request):
        last = request.messages[-1]
        if last["role"] == "user" and isinstance(last["content"], str) and last["content"].startswith("/call "):
            yield {"type": "tool-call", "tool_call_id": "call-1", "tool_name": last["content"][6:],
                   "args_text": '{"prompt": "hi"}'}
            yield {"type": "finish", "finish_reason": "tool-calls", "usage": {"input_tokens": 1, "output_tokens": 1}}
            return
        if last["role"] == "tool":
            part = last["content"][0]
            said = part["result"].get("text") if isinstance(part["result"], dict) else part["result"]
            yield {"type": "text-delta", "text": f"{part['toolName']} said: {said}"}
            yield {"type": "finish", "finish_reason": "stop", "usage": {"input_tokens": 1, "output_tokens": 1}}
            return
        system = " / ".join(m["content"] for m in request.messages if m["role"] == "system")
        tools = ", ".join(f"{t['name']}={t['description']}" for t in request.tools)
        yield {"type": "response-metadata", "id": None, "model_id": self.model_id, "timestamp": None, "headers": {}}
        yield {"type": "text-delta", "text": f"system: {system} | tools: {tools}"}
        yield {"type": "finish", "finish_reason": "stop",
               "usage": {"input_tokens": 3, "output_tokens": 5, "total_tokens": 8}}


def tool(name: str):
    return create_tool(id=name, description=f"The {name} tool.",
                       input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
                       execute=lambda i: {"tool": name})


LOCKS = {
    "free": None,
    "locked": False,
    "instr": {"instructions": True},
    "tooled": {"tools": True},
    "desc": {"tools": {"description": True}},
}
MODEL = ConfigEchoModel()
AGENTS = {agent_id: Agent(id=agent_id, name=f"Agent {agent_id}", instructions=f"Code {agent_id}.", model=MODEL,
                          tools={"alpha": tool("alpha"), "beta": tool("beta")}, editor=editor)
          for agent_id, editor in LOCKS.items()}
AGENTS["careful"] = Agent(id="careful", instructions="Code careful.", model=MODEL, tools={
    "wipe": create_tool(id="wipe", description="Wipes.", execute=lambda i: {"text": "wiped"}, require_approval=True)})
# its model is a fallback chain the editor may change (``editor={"model": True}``)
AGENTS["modeled"] = Agent(id="modeled", name="Agent modeled", instructions="Code modeled.",
                          model=[{"model": "local/echo", "max_retries": 1}], editor={"model": True, "instructions": True})
AGENTS["boss"] = Agent(id="boss", instructions="Code boss.", model=MODEL, agents={"free": AGENTS["free"]})

mastra = Mastra(agents=AGENTS, tools={"gamma": tool("gamma")}, overrides=EditorOverrides())
