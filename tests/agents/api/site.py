"""The agents the HTTP API tests serve (``MASTRA=tests.agents.api.site:mastra``): offline models only.

- ``echo``: ``local/echo`` with memory and two tools: ``add`` (runs at once) and ``delete`` (waits
  for an approval). ``/tool add {"a": 2, "b": 5}`` in a message makes the model call it.
- ``slow``: ``local/echo`` that waits 40 ms before each streamed line (a run stays active a while).
- ``plain``: ``local/echo`` without memory (thread features refuse it) and without a voice.

``echo`` has the offline ``LocalVoice`` as its voice (speaks a WAV tone, hears "transcript of <N> bytes").
"""

from agents.memory import Memory
from agents.runtime import Agent, CompositeVoice, LocalVoice, Mastra, create_tool

deleted: list = []


def add(input: dict) -> dict:
    return {"sum": input["a"] + input["b"]}


def delete(input: dict) -> dict:
    deleted.append(input["path"])
    return {"deleted": input["path"]}


add_tool = create_tool(
    id="add", description="Add two numbers and return their sum.",
    input_schema={"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                  "required": ["a", "b"], "additionalProperties": False},
    output_schema={"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]},
    execute=add)
delete_tool = create_tool(
    id="delete", description="Delete a file.",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    execute=delete, require_approval=True)

echo = Agent(id="echo", name="Echo", description="Echoes what it receives.", instructions="Echo the user.",
             model="local/echo", tools={"add": add_tool, "delete": delete_tool}, memory=Memory(last_messages=20),
             voice=CompositeVoice(input=LocalVoice(), output=LocalVoice()))
slow = Agent(id="slow", name="Slow", instructions="Echo slowly.", model={"id": "local/echo", "delay_ms": 40},
             memory=Memory())
plain = Agent(id="plain", name="Plain", instructions="Echo without memory.", model="local/echo")

mastra = Mastra(agents={"echo": echo, "slow": slow, "plain": plain})
