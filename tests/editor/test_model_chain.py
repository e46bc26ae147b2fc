"""The model as a fallback chain in the admin editor: editable only where the agent's code says
``editor={"model": True}`` and the user may edit it, checked on save (form errors), stored as a
version, and used by the next run once published."""

import pytest
from asgiref.sync import async_to_sync
from django.test import Client
from django.urls import reverse

from agents.editor.model_chain import code_chain, model_chain_check
from agents.editor.models import AgentDefinition, AgentVersion
from agents.editor.exceptions import InvalidOverride
from agents.editor.services import version_publish, version_save
from agents.runtime.testing import ScriptedModel
from tests.editor.conftest import staff

pytestmark = pytest.mark.django_db


def page_url(agent_id):
    return reverse("admin:agents_agentdefinition_change", args=[AgentDefinition.objects.get(agent_id=agent_id).pk])


def chain_post(client, rows, **extra):
    """The modeled agent's form with the chain ``rows`` (model id, retries, enabled, order) filled in."""
    form = client.get(page_url("modeled")).context["form"]
    data = {"based_on": form.initial.get("based_on", ""), "note": "", "instructions": "Code modeled."}
    for index, row in enumerate(form.model_rows):
        model_id, retries, enabled, order = rows[index] if index < len(rows) else ("", 0, True, index + 1)
        data.update({row["id"]: model_id, row["retries"]: retries, row["order"]: order})
        if enabled:
            data[row["enabled"]] = "on"
    data.update(extra)
    return client.post(page_url("modeled"), data)


def errors(response) -> dict:
    return {name: list(e) for name, e in response.context["form"].errors.items()}


def test_the_codes_chain_fills_the_rows(editor_admin_site, admin_client):
    page = admin_client.get(page_url("modeled")).content.decode()
    assert page.count('<tr class="model-row"') == 3  # the code's entry and two empty rows
    assert 'name="model_0_id" value="local/echo"' in page
    assert 'name="model_0_retries" value="1"' in page
    assert 'name="model_0_enabled" id="id_model_0_enabled" checked' in page
    assert 'name="model_1_id"' in page and 'name="model_1_id" value' not in page


def test_a_chain_is_saved_as_a_version_in_its_order(editor_admin_site, admin_client):
    response = chain_post(admin_client, [("local/echo", 1, True, 3), ("openai/gpt-4o", 2, True, 1),
                                         ("anthropic/claude-sonnet-4-5", 0, False, 2)])
    assert response.status_code == 302
    assert AgentVersion.objects.get().overrides == {"model": [
        {"model": "openai/gpt-4o", "max_retries": 2, "enabled": True},
        {"model": "anthropic/claude-sonnet-4-5", "max_retries": 0, "enabled": False},
        {"model": "local/echo", "max_retries": 1, "enabled": True}]}
    page = admin_client.get(page_url("modeled")).content.decode()
    assert 'name="model_0_id" value="openai/gpt-4o"' in page  # the saved chain is the next starting point
    assert page.count('<tr class="model-row"') == 5


def test_the_codes_chain_saved_unchanged_stores_nothing(editor_admin_site, admin_client):
    response = chain_post(admin_client, [("local/echo", 1, True, 1)])
    assert response.status_code == 200 and errors(response) == {"__all__": ["Nothing to save: no field changed."]}


@pytest.mark.parametrize("rows, field, message", [
    ([("gpt-4o", 0, True, 1)], "model_0_id",
     "'gpt-4o' is not a model id; expected 'provider/model', e.g. 'openai/gpt-4o' (known providers: anthropic, google, "
     "local, openai)."),
    ([("local/echo", 0, True, 1), ("nope/x", 0, True, 2)], "model_1_id",
     "Unknown model provider 'nope' in 'nope/x' (known providers: anthropic, google, local, openai)."),
    ([("openai/gpt 4o", 0, True, 1)], "model_0_id", "'openai/gpt 4o' is not a model id: no spaces, e.g. openai/gpt-4o."),
    ([("local/echo", 11, True, 1)], "model_0_retries", "Retries are a whole number from 0 to 10."),
    ([("local/echo", -1, True, 1)], "model_0_retries", "Ensure this value is greater than or equal to 0."),
    ([("local/echo", 0, False, 1), ("openai/gpt-4o", 0, False, 2)], "model_0_id",
     "At least one model of the chain must be enabled."),
    ([], "model_0_id", "The model chain needs at least one model."),
    # the error is shown on the row that holds the entry, whatever the order says
    ([("local/echo", 0, True, 2), ("openai/", 0, True, 1)], "model_1_id",
     "'openai/' is not a model id; expected 'provider/model', e.g. 'openai/gpt-4o' (known providers: anthropic, "
     "google, local, openai)."),
])
def test_a_bad_chain_is_a_form_error_and_nothing_is_stored(editor_admin_site, admin_client, rows, field, message):
    response = chain_post(admin_client, rows)
    assert response.status_code == 200
    assert errors(response) == {field: [message]}
    assert not AgentVersion.objects.exists()
    assert message.replace("'", "&#x27;") in response.content.decode()


def test_a_locked_model_is_read_only_and_a_forged_chain_is_refused(editor_admin_site, admin_client):
    page = admin_client.get(page_url("free")).content.decode()  # editor omitted: Mastra's model is code's
    assert 'name="model_0_id"' not in page
    assert '<pre class="readonly-value" id="readonly-model">ConfigEchoModel</pre>' in page
    assert "Read-only: locked by code (the agent's <code>editor</code> option allows it" in page
    response = admin_client.post(page_url("free"), {"based_on": "", "note": "", "model_0_id": "local/echo"})
    assert response.status_code == 403
    assert not AgentVersion.objects.exists()


def test_without_the_permission_the_chain_is_read_only(editor_admin_site):
    client = Client()
    client.force_login(staff("ivy", "edit_agent_instructions"))
    page = client.get(page_url("modeled")).content.decode()
    assert '<ol class="readonly-value" id="readonly-model"><li>local/echo (retries 1)</li></ol>' in page
    assert "Read-only: no permission." in page
    assert client.post(page_url("modeled"), {"based_on": "", "model_0_id": "openai/gpt-4o"}).status_code == 403
    editor = Client()
    editor.force_login(staff("mo", "edit_agent_model"))
    assert 'name="model_0_id" value="local/echo"' in editor.get(page_url("modeled")).content.decode()


def test_the_diff_lists_the_chains_entries(editor_admin_site, admin_client):
    version = version_save(agent_id="modeled", based_on_id=None, changes={"model": [
        {"model": "openai/gpt-4o", "max_retries": 2, "enabled": True},
        {"model": "local/echo", "max_retries": 1, "enabled": False}]})
    compare = admin_client.get(reverse("admin:agents_agentdefinition_compare", args=[version.agent_id]),
                               {"a": "code", "b": str(version.pk)}).content.decode()
    for line in ("- local/echo (retries 1)", "+ openai/gpt-4o (retries 2)", "+ local/echo (retries 1, disabled)"):
        assert line in compare


def test_the_codes_model_as_a_chain():
    assert code_chain("openai/gpt-4o") == [{"model": "openai/gpt-4o", "max_retries": 2, "enabled": True}]
    assert code_chain([{"model": "openai/gpt-4o", "maxRetries": 3}, {"model": "local/echo", "enabled": False},
                       "anthropic/claude-sonnet-4-5"]) == [
        {"model": "openai/gpt-4o", "max_retries": 3, "enabled": True},
        {"model": "local/echo", "max_retries": 0, "enabled": False},
        {"model": "anthropic/claude-sonnet-4-5", "max_retries": 0, "enabled": True}]
    assert code_chain(ScriptedModel([])) is None
    assert code_chain([{"model": "local/echo", "model_settings": {"temperature": 0}}]) is None  # not shown as rows
    assert code_chain(lambda rc: "local/echo") is None


def test_a_service_call_is_checked_as_the_form_is():
    with pytest.raises(InvalidOverride) as refused:
        model_chain_check([{"model": "local/echo", "max_retries": True}])
    assert (refused.value.field, refused.value.message) == ("model[0].max_retries",
                                                            "Retries are a whole number from 0 to 10.")


@pytest.mark.django_db(transaction=True)  # the run reads the published version from another thread
def test_a_published_chain_reaches_the_next_run_and_fails_over(editor_admin_site, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    agent = editor_admin_site.get_agent("modeled")
    before = async_to_sync(agent.generate)("hi")
    assert (before.text, before.models) == ("echo: hi", ["local/echo"])
    version = version_save(agent_id="modeled", based_on_id=None, changes={"model": [
        {"model": "openai/gpt-4o", "max_retries": 0, "enabled": True},
        {"model": "local/echo", "max_retries": 0, "enabled": True}]})
    draft = async_to_sync(agent.generate)("hi")
    assert draft.models == ["local/echo"]  # a draft changes nothing
    version_publish(version_id=version.pk)
    result = async_to_sync(agent.generate)("hi")
    # no OpenAI key in the test environment: the chain's first model is skipped, the second answers
    assert (result.text, result.models) == ("echo: hi", ["local/echo"])
    assert (before.steps[0].attempts, draft.steps[0].attempts) == ([], [])
    assert result.steps[0].attempts == [{"model": "openai/gpt-4o", "code": "missing_credentials", "status": None,
                                         "message": "provider 'openai' needs an API key: set OPENAI_API_KEY",
                                         "delayMs": None}]
    definition = async_to_sync(agent.get_definition)()
    assert definition.model == ({"model": "openai/gpt-4o", "max_retries": 0, "enabled": True},
                                {"model": "local/echo", "max_retries": 0, "enabled": True})


@pytest.mark.django_db(transaction=True)
def test_the_api_lists_the_published_chain(editor_admin_site, admin_client):
    version = version_save(agent_id="modeled", based_on_id=None, changes={"model": [
        {"model": "openai/gpt-4o", "max_retries": 2, "enabled": False},
        {"model": "local/echo", "max_retries": 0, "enabled": True}]})
    assert admin_client.get("/api/agents/modeled").json()["modelList"][0]["id"] == "local/echo"
    version_publish(version_id=version.pk)
    body = admin_client.get("/api/agents/modeled").json()
    assert (body["provider"], body["modelId"]) == ("local", "echo")  # the first enabled entry
    assert [(m["id"], m["enabled"], m["maxRetries"]) for m in body["modelList"]] == [
        ("openai/gpt-4o", False, 2), ("local/echo", True, 0)]
