from django.contrib import admin

from accounts.models import DirectoryIdentity
from corpus.admin import ReadOnlyAdmin, SuperuserOnlyAdmin


@admin.register(DirectoryIdentity)
class DirectoryIdentityAdmin(ReadOnlyAdmin, SuperuserOnlyAdmin):
    """Read-only: which directory identity signs in as which user. Bound at first sign-in or by an
    operator's `manage.py link_identity`, which audits every change; an edit here would not be."""

    list_display = ["issuer", "subject", "user", "created_at"]
    list_filter = ["issuer"]
    list_select_related = ["user"]
    raw_id_fields = ["user"]
    search_fields = ["subject", "user__username"]
