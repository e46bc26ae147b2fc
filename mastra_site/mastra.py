"""The agents of this site. Everything that looks agents up (HTTP, websockets, admin, the
notification dispatcher) finds them here through ``settings.MASTRA``."""

from __future__ import annotations

import ast
import math
import operator
import os
from datetime import datetime, timezone
from decimal import Decimal

from django.conf import settings

from agents.editor.overrides import EditorOverrides
from budgets.policy import DatabaseRunPolicy
from ledger.prices import step_cost
from agents.memory import Memory
from agents.runtime import (Agent, CompositeVoice, Mastra, OpenAIVoice, create_github_adapter, create_slack_adapter,
                            create_tool)
from agents.runtime.scoring import create_scorer

_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
              ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
              ast.USub: operator.neg, ast.UAdd: operator.pos}


#: The calculator's bounds: results and the operands of ``*`` and ``**`` stay within this many digits,
#: so that no expression can take the process's time or memory (``9**9**9``) or leave JSON numbers.
MAX_DIGITS = 300


def _digits(value: float) -> float:
    """Decimal digits of ``value``'s integer part (0 for magnitudes below 1)."""
    magnitude = abs(value)
    return math.log10(magnitude) + 1 if magnitude >= 1 else 0.0


def _check_size(left: float, right: float, op: ast.operator) -> None:
    if isinstance(op, ast.Pow):
        if abs(right) > 100:
            raise ValueError("exponent too large")
        if _digits(left) * abs(right) > MAX_DIGITS:
            raise ValueError(f"result would have more than {MAX_DIGITS} digits")
    elif isinstance(op, ast.Mult) and _digits(left) + _digits(right) > MAX_DIGITS + 1:
        raise ValueError(f"result would have more than {MAX_DIGITS} digits")


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        if _digits(node.value) > MAX_DIGITS:
            raise ValueError(f"numbers are limited to {MAX_DIGITS} digits")
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _evaluate(node.left), _evaluate(node.right)
        _check_size(left, right, node.op)
        value = _OPERATORS[type(node.op)](left, right)
        if isinstance(value, complex):
            raise ValueError("the result is not a real number")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("the result is too large")
        return value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.operand))
    raise ValueError("only numbers and + - * / // % ** are allowed")


def calculate(input: dict) -> dict:
    expression = input["expression"]
    try:
        value = _evaluate(ast.parse(expression, mode="eval"))
    except (SyntaxError, ZeroDivisionError, OverflowError, ValueError) as exc:
        raise ValueError(f"cannot evaluate {expression!r}: {exc}") from None
    return {"expression": expression, "value": value}


def current_time(input: dict) -> dict:
    now = datetime.now(timezone.utc)
    return {"utc": now.isoformat(timespec="seconds"), "weekday": now.strftime("%A")}


calculator_tool = create_tool(
    id="calculate",
    description="Evaluate an arithmetic expression (numbers and + - * / // % **).",
    input_schema={"type": "object", "properties": {"expression": {"type": "string", "maxLength": 200}},
                  "required": ["expression"], "additionalProperties": False},
    output_schema={"type": "object", "properties": {"expression": {"type": "string"}, "value": {"type": "number"}},
                   "required": ["value"]},
    execute=calculate,
)

clock_tool = create_tool(
    id="current-time",
    description="The current date and time in UTC.",
    input_schema={"type": "object", "properties": {}, "additionalProperties": False},
    execute=current_time,
)

def restart_service(input: dict) -> dict:
    """A demonstration: nothing is restarted; the request is acknowledged once an operator approved it."""
    return {"service": input["service"], "restarted": True,
            "at": datetime.now(timezone.utc).isoformat(timespec="seconds")}


restart_tool = create_tool(
    id="restart-service",
    description="Restart a service (a demonstration: it restarts nothing). Needs an operator's approval.",
    input_schema={"type": "object", "properties": {"service": {"type": "string", "minLength": 1, "maxLength": 80}},
                  "required": ["service"], "additionalProperties": False},
    execute=restart_service,
    require_approval=True,
)

#: an answer longer than this scores below 1 on the conciseness scorer
CONCISE_CHARS = 600


def answer_text(run: dict) -> str:
    """The text of a scored run's answer (its response messages' text parts)."""
    pieces = []
    for message in run.get("output") or []:
        content = message.get("content")
        if isinstance(content, str):
            pieces.append(content)
        elif isinstance(content, list):
            pieces.extend(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return "".join(pieces)


def concise_score(ctx: dict) -> float:
    length = len(answer_text(ctx["run"]))
    return 1.0 if length <= CONCISE_CHARS else round(CONCISE_CHARS / length, 3)


conciseness_scorer = create_scorer(
    id="conciseness", name="Conciseness",
    description=f"1 for an answer of at most {CONCISE_CHARS} characters, less the longer it gets.",
    generate_score=concise_score,
    generate_reason=lambda ctx: f"{len(answer_text(ctx['run']))} characters",
)


def demo_channels(env=os.environ) -> dict | None:
    """The demo agent's channels (docs/channels.md), from the environment only: Slack with
    ``SLACK_BOT_TOKEN`` and ``SLACK_SIGNING_SECRET``; GitHub with ``GITHUB_WEBHOOK_SECRET`` and
    ``GITHUB_TOKEN``, or ``GITHUB_APP_ID`` with ``GITHUB_PRIVATE_KEY`` (the PEM, or
    ``GITHUB_PRIVATE_KEY_FILE``), mentioned as ``GITHUB_BOT_LOGIN``. ``SLACK_API_URL`` /
    ``GITHUB_API_URL`` point them elsewhere (a proxy, a local fake). None without either."""
    adapters = {}
    if env.get("SLACK_BOT_TOKEN") and env.get("SLACK_SIGNING_SECRET"):
        adapters["slack"] = create_slack_adapter(bot_token=env["SLACK_BOT_TOKEN"],
                                                 signing_secret=env["SLACK_SIGNING_SECRET"],
                                                 api_url=env.get("SLACK_API_URL") or "https://slack.com/api/")
    key = env.get("GITHUB_PRIVATE_KEY") or ""
    if not key and env.get("GITHUB_PRIVATE_KEY_FILE"):
        with open(env["GITHUB_PRIVATE_KEY_FILE"], encoding="utf-8") as file:
            key = file.read()
    if env.get("GITHUB_WEBHOOK_SECRET") and (env.get("GITHUB_TOKEN") or (env.get("GITHUB_APP_ID") and key)):
        credentials = ({"token": env["GITHUB_TOKEN"]} if env.get("GITHUB_TOKEN")
                       else {"app_id": env["GITHUB_APP_ID"], "private_key": key})
        adapters["github"] = create_github_adapter(webhook_secret=env["GITHUB_WEBHOOK_SECRET"],
                                                   bot_login=env.get("GITHUB_BOT_LOGIN") or None,
                                                   api_url=env.get("GITHUB_API_URL") or "https://api.github.com",
                                                   **credentials)
    return {"adapters": adapters} if adapters else None
def demo_model() -> str | list:
    """The ops assistant's model: ``MASTRA_DEFAULT_MODEL``, falling back to the offline ``local/echo``
    when that model fails (no key, an outage) - a fallback chain (docs/agents.md)."""
    primary = settings.MASTRA_DEFAULT_MODEL
    if primary == "local/echo":
        return primary
    return [{"model": primary, "max_retries": 2}, {"model": "local/echo"}]


def demo_voice(env=os.environ) -> CompositeVoice | None:
    """OpenAI's speech and transcription as the ops assistant's voice, when a key (or an
    OpenAI-compatible server) is configured (docs/voice.md); None otherwise (the chat page then
    shows no microphone and no Play buttons for it)."""
    if not (env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL")):
        return None
    return CompositeVoice(input=OpenAIVoice(), output=OpenAIVoice())


ops_agent = Agent(
    id="ops-assistant",
    name="Ops Assistant",
    description="Answers operators' questions, does arithmetic and tells the time.",
    instructions=[
        "You are a concise operations assistant for a small engineering team.",
        "Use the calculate tool for arithmetic and the current-time tool for dates; never guess them.",
    ],
    model=demo_model(),
    voice=demo_voice(),
    tools={"calculate": calculator_tool, "current-time": clock_tool, "restart-service": restart_tool},
    memory=Memory(last_messages=20, generate_title=True),
    # every answer is scored in the background (admin: Scores, and each run's page)
    scorers={"conciseness": conciseness_scorer},
    # the chat page's empty thread offers these (``/tool …`` lines are for the offline model, local/echo)
    metadata={"examples": [
        '/tool calculate {"expression": "2*(3+4)"}',
        "/tool current-time",
        '/tool restart-service {"service": "billing-api"}',
        "What should I check first when the API returns 502s?",
    ]},
    # its instructions, tool descriptions and model chain are editable in the admin (docs/editor.md)
    editor={"instructions": True, "tools": {"description": True}, "model": True},
    # Slack threads and GitHub issues, when their credentials are in the environment
    channels=demo_channels(),
)

# One agent per editor lock, so that the admin editor shows each kind (docs/editor.md).
writer_agent = Agent(
    id="support-writer",
    name="Support Writer",
    description="Drafts replies to customers (editor omitted: instructions and tools are editable).",
    instructions="You draft short, friendly replies to customer questions. Sign as 'The Support Team'.",
    model=settings.MASTRA_DEFAULT_MODEL,
    tools={"current-time": clock_tool},
    memory=Memory(last_messages=20, generate_title=True),
    metadata={"examples": ["A customer asks when their refund will arrive.", "/tool current-time"]},
)

policy_agent = Agent(
    id="policy-bot",
    name="Policy Bot",
    description="Quotes the refund policy word for word (editor=False: read-only in the admin).",
    instructions="Quote the refund policy: refunds within 30 days of purchase, on the original payment method.",
    model=settings.MASTRA_DEFAULT_MODEL,
    memory=Memory(last_messages=20, generate_title=True),
    metadata={"examples": ["Can I get a refund 45 days after buying?"]},
    editor=False,
)

triage_agent = Agent(
    id="triage-notes",
    name="Triage Notes",
    description="Summarises incident notes (only its instructions are editable).",
    instructions="Summarise incident notes in three bullet points: impact, cause, next step.",
    model=settings.MASTRA_DEFAULT_MODEL,
    tools={"calculate": calculator_tool},
    memory=Memory(last_messages=20, generate_title=True),
    metadata={"examples": [
        "Checkout failed for 25 minutes after the 14:05 deploy; rolled back at 14:30; cause: a missing index.",
        '/tool calculate {"expression": "25*60"}',
    ]},
    editor={"instructions": True},
)


def demo_budgets() -> list[dict]:
    """The demo site's budgets (docs/operations.md): every run of the site together may spend
    ``MASTRA_DEMO_DAILY_BUDGET_USD`` a day (hard: model calls are refused once it is spent, until
    midnight in ``MASTRA_BUDGET_TIME_ZONE``); none when it is 0. The dashboard shows it; a budget of
    the same name in the admin replaces it."""
    limit = Decimal(settings.MASTRA_DEMO_DAILY_BUDGET_USD)
    if limit <= 0:
        return []
    return [{"id": "daily-spend", "scope": "site", "period": "day", "unit": "usd", "limit": limit, "mode": "hard"}]


mastra = Mastra(
    agents={"ops-assistant": ops_agent, "support-writer": writer_agent, "policy-bot": policy_agent,
            "triage-notes": triage_agent},
    # the admin editor's published overrides, applied at the start of every run
    overrides=EditorOverrides(),
    # budgets and concurrency limits, checked before every model call (costs from the price table)
    policy=DatabaseRunPolicy(pricer=step_cost),
    budgets=demo_budgets(),
)

#: Schedules this site declares (docs/schedules.md): created at start when missing (the site's
#: background jobs, ``mastra_site.workers``), never overwritten, so what an operator changes in the
#: admin stays. The digest is paused: resume it in the admin (Schedules) or with
#: ``mastra.schedules.resume("agent_daily-digest")``.
DECLARED_SCHEDULES = [
    dict(id="daily-digest", agent_id="ops-assistant", cron="0 9 * * 1-5", timezone="UTC", status="paused",
         name="Daily digest",
         prompt="Write the team's morning digest: today's date and weekday (use the current-time tool), then "
                "three short reminders for an operations team starting its day."),
]
