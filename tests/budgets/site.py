"""The agents of the budgets tests served over HTTP (``MASTRA=tests.budgets.site:mastra``): the
offline ``local/echo`` model with memory, under the database's run policy; the budgets come from
the admin (``budgets.models.Budget`` rows the tests create)."""

from agents.memory import Memory
from agents.runtime import Agent, Mastra
from budgets.policy import DatabaseRunPolicy

echo = Agent(id="echo", name="Echo", instructions="Echo the user.", model="local/echo", memory=Memory(last_messages=20))
slow = Agent(id="slow", name="Slow", instructions="Echo slowly.", model={"id": "local/echo", "delay_ms": 40},
             memory=Memory(last_messages=20))

mastra = Mastra(agents={"echo": echo, "slow": slow}, policy=DatabaseRunPolicy())
