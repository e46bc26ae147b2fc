"""The agent ``bench/http_api.py`` serves (``MASTRA=bench.http_site:mastra``): ``echo`` on ``local/echo``
with memory, as the ``echo`` agent of Mastra's reference server."""

from agents.memory import Memory
from agents.runtime import Agent, Mastra

echo = Agent(id="echo", name="Echo", description="Replies with echo: <your text>.",
             instructions="Repeat the user message.", model="local/echo", memory=Memory(last_messages=20))

mastra = Mastra(agents={"echo": echo})
