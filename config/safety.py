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
    weakness = secret_key_weakness(settings.SECRET_KEY, development=settings.DEVELOPMENT_SECRET_KEY)
    if weakness:
        reasons.append(
            f"CAIRN_SECRET_KEY {weakness}. Set it to a long random value, e.g. "
            '`python -c "import secrets; print(secrets.token_urlsafe(50))"`.'
        )
    if demo_password_still_set():
        reasons.append(
            f"The demo curator {DEMO_USERNAME!r} still has its demo password. Change it "
            f"(`manage.py changepassword {DEMO_USERNAME}`) or delete the account."
        )
    return reasons


# Words of a value that is there to be replaced (deploy/cairn.env ships "CHANGE-ME-to-a-long-...").
_PLACEHOLDER_WORDS = ("changeme", "change-me", "change_me", "insecure", "placeholder", "replace-me", "your-secret")
SECRET_KEY_MIN_LENGTH, SECRET_KEY_MIN_CHARACTERS = 50, 5  # Django's own deploy check (security.W009)


def secret_key_weakness(key: str, *, development: str) -> str:
    """Why `key` must not sign sessions and tokens ("" when nothing obvious is wrong with it)."""
    if key == development:
        return "is the development key"
    if any(word in key.lower() for word in _PLACEHOLDER_WORDS):
        return "is still a placeholder (deploy/cairn.env's CHANGE-ME value, or one like it)"
    if len(key) < SECRET_KEY_MIN_LENGTH or len(set(key)) < SECRET_KEY_MIN_CHARACTERS:
        least = f"{SECRET_KEY_MIN_LENGTH} characters, {SECRET_KEY_MIN_CHARACTERS} of them different"
        return f"is too weak: it needs at least {least}"
    return ""


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
        import threading

        from corpus.embedder import embedder_warm
        from judges.verifiers import verifiers_warm

        def warm() -> None:
            # One model at a time, in one thread: two threads compiling OpenVINO models at once
            # gain nothing on a few cores, and a served test's worker once stopped answering while
            # both ran (tests/test_serving.py's wait_healthy).
            embedder_warm()
            verifiers_warm()

        threading.Thread(target=warm, name="cairn-warm-models", daemon=True).start()
