"""One converter between Mastra's camelCase and this project's snake_case."""

from agents.runtime.naming import camel_case, camel_keys, snake_case, snake_keys


def test_snake_case():
    assert [snake_case(n) for n in ("maxSteps", "tagName", "cacheKey", "providerOptions", "baseURL", "apiKey",
                                    "max_steps", "id", "inputTokens", "v2Option")] == [
        "max_steps", "tag_name", "cache_key", "provider_options", "base_url", "api_key", "max_steps", "id",
        "input_tokens", "v2_option"]


def test_camel_case():
    assert [camel_case(n) for n in ("max_steps", "tag_name", "cached_input_tokens", "maxSteps", "id")] == [
        "maxSteps", "tagName", "cachedInputTokens", "maxSteps", "id"]


def test_round_trip_of_mastras_names():
    for name in ("runId", "tagName", "providerOptions", "dedupeKey", "coalesceKey", "deliverAt", "summaryAt",
                 "streamOptions", "deliverWhenIdle", "reasoningTokens", "toolCallId"):
        assert camel_case(snake_case(name)) == name


def test_keys_convert_only_the_top_level():
    schema = {"type": "object", "properties": {"maxItems": {"type": "string"}}}
    assert snake_keys({"maxSteps": 3, "responseFormat": schema, 1: "x"}) == {
        "max_steps": 3, "response_format": schema, 1: "x"}
    assert camel_keys({"max_steps": 3, "tool_choice": {"tool_name": "t"}}) == {
        "maxSteps": 3, "toolChoice": {"tool_name": "t"}}
    assert snake_keys(None) == {} and camel_keys(None) == {}
