"""Cairn's sign-in page: the password form, and the OpenID Connect provider's button when one is
configured (accounts/oidc.py)."""

from django.conf import settings
from django.contrib.auth import views as auth_views


class LoginView(auth_views.LoginView):
    template_name = "accounts/login.html"
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs):
        return super().get_context_data(**kwargs) | {
            "oidc_name": settings.CAIRN_OIDC_NAME if settings.CAIRN_OIDC_DISCOVERY_URL else ""
        }
