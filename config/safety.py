"""What a web server must not start with. Checked by every web process before it serves
(`web_process_start`, from config/wsgi.py and config/asgi.py) and by `manage.py selfcheck`; the
demo (CAIRN_DEMO, set by `make run` on loopback) and DEBUG are the only ways past it."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

DEMO_USERNAME = DEMO_PASSWORD = "demo"


def unsafe_start_reasons() -> list[str]:
    """Why this process must not serve, each with its fix; empty when it may."""
    if settings.DEBUG or settings.CAIRN_DEMO:
        return []
    reasons = []
    if settings.SECRET_KEY == settings.DEVELOPMENT_SECRET_KEY:
        reasons.append(
            "CAIRN_SECRET_KEY is the development key. Set it to a long random value, e.g. "
            '`python -c "import secrets; print(secrets.token_urlsafe(50))"`.'
        )
    if demo_password_still_set():
        reasons.append(
            f"The demo curator {DEMO_USERNAME!r} still has its demo password. Change it "
            f"(`manage.py changepassword {DEMO_USERNAME}`) or delete the account."
        )
    return reasons


def demo_password_still_set() -> bool:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.filter(username=DEMO_USERNAME, is_active=True).first()
    return user is not None and user.check_password(DEMO_PASSWORD)


def refuse_unsafe_start() -> None:
    from django.db import connections

    reasons = unsafe_start_reasons()
    # A web process checks once, in a thread that serves no request: it must not keep the connection.
    connections.close_all()
    if reasons:
        raise ImproperlyConfigured(
            "Cairn refuses to serve with DEBUG off:\n- " + "\n- ".join(reasons) + "\n(`make run` is the demo: "
            "it sets CAIRN_DEMO=true and serves on loopback only.)"
        )


def web_process_start() -> None:
    """What every web process (config/wsgi.py, config/asgi.py) does before it serves: refuse an
    unsafe start, then load the models in the background. Only web processes pay for the warm-up."""
    refuse_unsafe_start()
    if settings.CAIRN_WARM_MODELS:
        from corpus.embedder import embedder_warm_in_background
        from pipeline.verifiers import verifiers_warm_in_background

        embedder_warm_in_background()
        verifiers_warm_in_background()
