import os

from django.conf import settings
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_asgi_application()

from config.safety import refuse_unsafe_start  # noqa: E402 - needs the app registry loaded above

refuse_unsafe_start()

if settings.CAIRN_WARM_MODELS:
    from corpus.embedder import embedder_warm_in_background
    from pipeline.verifiers import verifiers_warm_in_background

    embedder_warm_in_background()
    verifiers_warm_in_background()
