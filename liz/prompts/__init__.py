"""Prompts: the Jinja2 templates in this folder and what renders them (``templates``),
what a template prints (``text``), the conversation's lines (``conversation``) and
window (``context_window``), and token estimates (``tokens``)."""
