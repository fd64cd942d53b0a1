"""Observability: OpenTelemetry traces, Prometheus metrics, token usage and cost, JSON logs.

Nothing is exported unless the standard ``OTEL_*`` variables say where (docs/observability.md).
"""
