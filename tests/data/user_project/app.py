"""A user's app: their own middleware module and agents package, served by liz."""

from __future__ import annotations

from agents.chef import create_chef

from liz import App
from middleware import no_shouting, tag_reply

chef = create_chef()
chef.use(no_shouting)  # only the chef's inputs

app = App([chef])
app.use(tag_reply)  # every input, first
