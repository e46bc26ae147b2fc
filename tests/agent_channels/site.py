"""The agents of the channel tests, built by the ``channel_site`` fixture once the fake platforms
listen (their adapters point at them): ``mastra`` is set then."""

from agents.memory import Memory
from agents.runtime import Agent, Mastra, create_github_adapter, create_slack_adapter, create_tool

SLACK_SECRET = "slack-signing-secret"
GITHUB_SECRET = "github-webhook-secret"

deleted: list = []


def delete(input: dict) -> dict:
    deleted.append(input["path"])
    return {"deleted": input["path"]}


delete_tool = create_tool(
    id="delete", description="Delete a file.",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    execute=delete, require_approval=True)

mastra: Mastra | None = None


def build(slack_url: str, github_url: str, *, models: dict | None = None, timeout: float = 10.0,
          handlers: dict | None = None) -> Mastra:
    """The site: ``ops`` (echo), and one agent per entry of ``models`` (id → model), all with both
    adapters on the fakes."""
    global mastra

    def channels(**extra):
        return {"adapters": {
            "slack": create_slack_adapter(bot_token="xoxb-test", signing_secret=SLACK_SECRET, api_url=slack_url,
                                          timeout=timeout),
            "github": create_github_adapter(webhook_secret=GITHUB_SECRET, token="ghp_test", bot_login="ops-bot",
                                            api_url=github_url, timeout=timeout)}, **extra}

    agents = {"ops": Agent(id="ops", name="Ops", instructions="Help.", model="local/echo", tools={"delete": delete_tool},
                           memory=Memory(last_messages=40), channels=channels(handlers=handlers or {}))}
    for agent_id, model in (models or {}).items():
        agents[agent_id] = Agent(id=agent_id, instructions="Help.", model=model, tools={"delete": delete_tool},
                                 memory=Memory(last_messages=40), channels=channels())
    mastra = Mastra(agents=agents)
    return mastra
