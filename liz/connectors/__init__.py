"""Chat connectors (Telegram, Discord): a platform's message becomes a turn of the chain,
and the reply leaves through a durable outbox.

- :mod:`liz.connectors.platform`: what a platform module implements;
- :mod:`liz.connectors.inbox`: messages stored with the cursor that read them;
- :mod:`liz.connectors.outbox`: reply parts planned with the reply, then sent;
- :mod:`liz.connectors.splitting`: a reply cut under the platform's limit;
- :mod:`liz.connectors.allowlist`: the user ids a bot answers, when limited;
- :mod:`liz.connectors.bot`: the loop, one process per bot;
- :mod:`liz.connectors.leader`: that one process, chosen by a lock (the Twitter bot's too);
- :mod:`liz.connectors.run`: ``liz telegram run`` and ``liz discord run``;
- :mod:`liz.connectors.status`: each bot as ``/health`` and ``/metrics`` show it.
"""
