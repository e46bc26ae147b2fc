"""Schedules on the database: the rows behind ``mastra.schedules``, the claim of each fire (exactly
once across processes), the scheduler that runs them, the HTTP routes, the admin (docs/schedules.md)."""
