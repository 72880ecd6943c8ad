import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_asgi_application()

from config.safety import web_process_start  # noqa: E402 - needs the app registry loaded above

web_process_start()
