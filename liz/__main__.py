from liz.cli import app

app(prog_name="liz")
