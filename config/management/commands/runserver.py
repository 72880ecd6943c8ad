"""Django's development server, without the Python version in its Server header."""

from django.core.management.commands.runserver import Command as RunserverCommand
from django.core.servers.basehttp import ServerHandler, WSGIRequestHandler

# wsgiref names itself "WSGIServer/0.2 CPython/3.x.y" in responses (ServerHandler) and in its own
# error pages (WSGIRequestHandler).
ServerHandler.server_software = "Cairn"
WSGIRequestHandler.server_version = "Cairn"
WSGIRequestHandler.sys_version = ""


class Command(RunserverCommand):
    pass
