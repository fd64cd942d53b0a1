"""The Telegram bot (``liz telegram run``), on the connector core (:mod:`liz.connectors`).

Nothing here imports python-telegram-bot at the package's top level: ``liz --help``
works without the ``liz-agents[telegram]`` extra, and ``liz telegram run`` says which extra
to install.
"""
