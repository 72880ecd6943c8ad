import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

from config.safety import web_process_start  # noqa: E402 - needs the app registry loaded above

web_process_start()
