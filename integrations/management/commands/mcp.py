"""python manage.py mcp --user NAME

Cairn's MCP server over stdio, for an agent on the same machine that starts it as a subprocess:
the `search` and `ask` tools of /mcp, answering as NAME (what NAME may read, nothing more). Whoever
can run manage.py can read the database already, so the user is named, not authenticated. The
protocol owns standard output while it serves; anything else printed goes to standard error."""

from __future__ import annotations

import anyio
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from mcp.server.stdio import stdio_server

from integrations.mcp_server import server_for


class Command(BaseCommand):
    help = "Serve Cairn's MCP tools (search, ask) over stdio as one user."

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True, help="the username the tools answer as")

    def handle(self, *args, user, **options):
        asker = get_user_model().objects.filter(username=user, is_active=True).first()
        if asker is None:
            raise CommandError(f"no active user named {user!r} (manage.py reader {user} creates one)")
        server = server_for(asker)

        async def serve() -> None:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())

        anyio.run(serve)
