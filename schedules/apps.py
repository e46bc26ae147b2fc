from django.apps import AppConfig


class SchedulesConfig(AppConfig):
    name = "schedules"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "Schedules"

    def ready(self) -> None:
        from agents.runtime.schedules import set_schedule_store

        from .store import DjangoScheduleStore

        set_schedule_store(DjangoScheduleStore())
