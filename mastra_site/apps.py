from django.apps import AppConfig


class MastraSiteConfig(AppConfig):
    name = "mastra_site"
    label = "mastra_site"

    def ready(self) -> None:
        from mastra_site import checks  # noqa: F401  (registers the system checks)
