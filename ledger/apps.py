from django.apps import AppConfig


class LedgerConfig(AppConfig):
    name = "ledger"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "Cost ledger"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from agents.runtime.tracing import add_step_observer

        from .models import ModelPrice
        from .prices import prices_forget
        from celery.signals import worker_process_shutdown

        from .writer import ledger_writer_shutdown, step_record

        # every answered model step of this process's runs goes to the ledger's background writer,
        # which writes what it holds at a clean exit (atexit) and when a Celery worker process ends
        add_step_observer(step_record)
        worker_process_shutdown.connect(ledger_writer_shutdown, dispatch_uid="ledger.writer")

        # an edit in this process is seen at once; other processes reload within the cache's lifetime
        post_save.connect(prices_forget, sender=ModelPrice, dispatch_uid="ledger.prices.save")
        post_delete.connect(prices_forget, sender=ModelPrice, dispatch_uid="ledger.prices.delete")
