from django.conf import settings
from django.db import models


class RateWindow(models.Model):
    """Requests counted for one throttle key in one fixed window (accounts/throttling.py)."""

    key = models.CharField(max_length=200)
    window = models.BigIntegerField(help_text="The window's start, in seconds since the epoch.")
    hits = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["key", "window"], name="rate_window_key_window")]

    def __str__(self) -> str:
        return f"{self.key} @ {self.window}: {self.hits}"


class DirectoryIdentity(models.Model):
    """A directory's account, named by its issuer and subject, bound to the Cairn user it signs in
    as (accounts/identities.py). Never by a bare user name: names at a directory are not unique and
    are often chosen by the person (OpenID Connect's preferred_username), so a name alone would let a
    directory account become any local account of that name, the break-glass superuser included."""

    LDAP = "ldap"
    SSO_HEADER = "sso-header"

    issuer = models.CharField(
        max_length=255, help_text="The OpenID Connect provider's issuer (iss), or 'ldap', or 'sso-header'."
    )
    subject = models.CharField(
        max_length=500,
        help_text="Who at that issuer: the ID token's sub, the LDAP entry's DN (lower case), the SSO proxy's user header.",
    )
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="directory_identities")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="directory_identity_issuer_subject")]
        verbose_name_plural = "directory identities"

    def __str__(self) -> str:
        return f"{self.issuer} {self.subject}"
