"""The Discord bot (``liz discord run``), on the connector core (:mod:`liz.connectors`).

Nothing here imports discord.py at the package's top level: ``liz --help`` works
without the ``liz-agents[discord]`` extra, and ``liz discord run`` says which extra
to install. :mod:`liz.discord.messages` holds the decisions on plain data (which
message to answer, what it says, the cursor); :mod:`liz.discord.platform` is the
one module that talks to discord.py.
"""
