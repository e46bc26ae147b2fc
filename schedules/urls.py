"""The schedules' HTTP routes, mounted at ``/api/`` beside ``agents.api.urls`` (docs/schedules.md)."""

from django.urls import path

from . import api

schedule = "schedules/<str:schedule_id>"

urlpatterns = [
    path("schedules", api.ScheduleListView.as_view(), name="api-schedules"),
    path(schedule, api.ScheduleDetailView.as_view(), name="api-schedule"),
    path(f"{schedule}/pause", api.SchedulePauseView.as_view(), name="api-schedule-pause"),
    path(f"{schedule}/resume", api.ScheduleResumeView.as_view(), name="api-schedule-resume"),
    path(f"{schedule}/run", api.ScheduleRunView.as_view(), name="api-schedule-run"),
    path(f"{schedule}/triggers", api.ScheduleTriggersView.as_view(), name="api-schedule-triggers"),
]
