"""Budgets and limits (docs/operations.md): the database's side of the run policy."""
