"""Cairn's own sign-in pages, for every employee (the admin's sign-in admits staff only)."""

from django.contrib.auth import views as auth_views
from django.urls import path, reverse_lazy

from accounts import oidc, views

urlpatterns = [
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("oidc/login/", oidc.oidc_login, name="oidc-login"),  # OpenID Connect (CAIRN_OIDC_DISCOVERY_URL)
    path("oidc/callback/", oidc.oidc_callback, name="oidc-callback"),  # POST only: a link cannot sign anyone out
    path(
        "password/",
        auth_views.PasswordChangeView.as_view(
            template_name="accounts/password_change.html", success_url=reverse_lazy("password-changed")
        ),
        name="password-change",
    ),
    path(
        "password/done/",
        auth_views.PasswordChangeDoneView.as_view(template_name="accounts/password_changed.html"),
        name="password-changed",
    ),
]
