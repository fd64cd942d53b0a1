"""Durable learning: a queue of fact-extraction jobs in the database, and its worker."""
