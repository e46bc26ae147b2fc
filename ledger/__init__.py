"""The cost ledger: model prices with effective dates (``ledger.prices``), one row per model step
(``ledger.models.LedgerEntry``), written in the background by ``ledger.writer``; the costs pages
read ``ledger.selectors``. docs/operations.md describes it."""
