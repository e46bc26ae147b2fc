from django.apps import AppConfig


class BudgetsConfig(AppConfig):
    name = "budgets"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "Budgets and limits"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from . import checks  # noqa: F401  (registers the system checks)
        from .models import Budget
        from .selectors import budgets_cache_clear

        # this process sees an admin change at once; the others within MASTRA_BUDGETS_CACHE_S
        post_save.connect(budgets_cache_clear, sender=Budget, dispatch_uid="budgets.cache.save")
        post_delete.connect(budgets_cache_clear, sender=Budget, dispatch_uid="budgets.cache.delete")
