import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# Only web processes import this module (runserver and gunicorn), so only they are refused an
# unsafe start and only they pay for the warm-up.
from config.safety import refuse_unsafe_start  # noqa: E402 - needs the app registry loaded above

refuse_unsafe_start()

if settings.CAIRN_WARM_MODELS:
    from corpus.embedder import embedder_warm_in_background
    from pipeline.verifiers import verifiers_warm_in_background

    embedder_warm_in_background()
    verifiers_warm_in_background()
