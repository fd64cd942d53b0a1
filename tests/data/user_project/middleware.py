"""A user's own module named `middleware`, as many projects have one."""

from __future__ import annotations

ORDER_HEADER = "x-order"


async def tag_reply(req, res, next):
    req.state["seen_by"] = ["app"]
    await next()
    if res.reply is not None:
        res.reply.text = f"{res.reply.text} [{'>'.join(req.state['seen_by'])}]"


async def no_shouting(req, res, next):
    text = req.input.text or ""
    if text.isupper():
        await res.send("Let's keep it calm.")
        return
    req.state["seen_by"].append("agent")
    await next()
