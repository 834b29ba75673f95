"""`python -m tide.server`: the same as `tide server`."""

from tide.cli.server import server_app

server_app(prog_name="tide server")
