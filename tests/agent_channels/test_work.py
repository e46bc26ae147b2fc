"""Who runs the channels' work: the ``channels`` job of every serving process (only when an agent
has channels) and the Celery task beat runs; a received event nobody handed over is handed by it."""

import pytest

from agent_channels.models import ChannelEvent
from mastra_site.workers import JOBS
from tests.agent_channels.conftest import mention, slack_post

pytestmark = pytest.mark.django_db(transaction=True)


async def test_the_channels_job_runs_only_where_an_agent_has_channels(make_site, settings):
    job = next(job for job in JOBS if job.name == "channels")
    settings.MASTRA = "tests.agents.api.site:mastra"
    from agents.registry import get_mastra

    get_mastra.cache_clear()
    assert job.enabled() is False
    settings.MASTRA = "tests.agent_channels.site:mastra"
    make_site()
    assert job.enabled() is True and job.interval() == 0.5
    settings.MASTRA_CHANNELS_SCHEDULER = False
    assert job.enabled() is False
    assert settings.CELERY_BEAT_SCHEDULE["channels-work"]["task"] == "agent_channels.channels_work"


async def test_an_event_left_by_the_receiver_is_handed_over_by_the_work(channel_site, slack_fake, settings, drive):
    settings.MASTRA_CHANNELS_HANDOFF_INLINE = False
    await slack_post(mention("anyone?", ts="1700000001.000100"))
    assert (await ChannelEvent.objects.aget()).status == "received"
    await drive()
    assert (await ChannelEvent.objects.aget()).status == "handed"
    assert [m["text"] for m in slack_fake.posted("C1")] == ["echo: [Alice (@U123)]: <@UBOT> anyone?"]


def test_the_celery_task_runs_one_pass(make_site, transactional_db):
    from agent_channels.tasks import channels_work_task

    make_site()
    assert channels_work_task.apply().get() == {"handed": 0, "relayed": 0, "sent": 0}
