"""The budgets' system checks."""


def test_a_budget_time_zone_that_is_not_one_is_refused_at_start(settings):
    from budgets.checks import check_budget_time_zone

    settings.MASTRA_BUDGET_TIME_ZONE = "Mars/Olympus"
    assert [(e.id, e.msg) for e in check_budget_time_zone(None)] == [
        ("budgets.E001", "MASTRA_BUDGET_TIME_ZONE 'Mars/Olympus' is not a time zone")]
    settings.MASTRA_BUDGET_TIME_ZONE = "Europe/Paris"
    assert check_budget_time_zone(None) == []
