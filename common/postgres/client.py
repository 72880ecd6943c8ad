"""`manage.py dbshell` for Cairn's backend: with no DATABASE_URL, psql reaches the embedded server."""

from django.conf import settings
from django.db.backends.postgresql import client

from common.embedded_db import embedded_psql, embedded_socket_dir


class DatabaseClient(client.DatabaseClient):
    @classmethod
    def settings_to_cmd_args_env(cls, settings_dict, parameters):
        if not settings.CAIRN_EMBEDDED_DB:
            return super().settings_to_cmd_args_env(settings_dict, parameters)
        # Joining makes this process a handle on the server: it runs for as long as psql does.
        host = embedded_socket_dir(settings.CAIRN_DATA_DIR, settings_dict["NAME"])
        args, env = super().settings_to_cmd_args_env({**settings_dict, "HOST": host}, parameters)
        args[0] = embedded_psql()
        return args, env
