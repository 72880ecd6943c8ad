"""Sources in the admin: curators add, change and sync the sources of the collections they
curate (corpus.admin.CuratedAdmin), each change through the services, so audited and scheduled;
every sync is shown on its source."""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import transaction

from common.exceptions import CairnError
from corpus.admin import CuratedAdmin, ReadOnlyAdmin
from sources.models import SecretGrant, Source, SourceItem, SyncRun
from sources.selectors import secrets_granted_for
from sources.services import EDITABLE, source_check, source_create, source_delete, source_sync_enqueue, source_update


class SyncRunInline(admin.TabularInline):
    model = SyncRun
    fields = ["started_at", "status", "duration", "listed", "added", "updated", "moved", "unchanged", "retracted",
              "failed", "restricted", "error", "errors"]  # fmt: skip
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False
    ordering = ["-started_at"]
    show_change_link = True


@admin.register(Source)
class SourceAdmin(CuratedAdmin):
    list_display = ["name", "kind", "collection", "location", "schedule", "enabled", "last_sync"]
    list_filter = ["kind", "enabled", "collection"]
    list_select_related = ["collection", "owner"]
    search_fields = ["name", "location"]
    raw_id_fields = ["owner"]
    fields = ["name", "kind", "collection", "location", "branch", "credentials", "schedule", "include", "exclude",
              "owner", "enabled"]  # fmt: skip
    inlines = [SyncRunInline]
    actions = ["sync_now"]

    def get_readonly_fields(self, request, obj=None):
        return ["name", "kind", "collection"] if obj is not None else []  # they name what its documents are

    @admin.display(description="last sync")
    def last_sync(self, obj):
        run = obj.runs.order_by("-started_at").first()
        return f"{run.status} {run.started_at:%Y-%m-%d %H:%M}" if run else "never"

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        kind = obj.kind if obj is not None else None
        collection = obj.collection if obj is not None else None

        grants = secrets_granted_for(user=request.user)
        if obj is not None:
            grants = grants.filter(collection=obj.collection)
        hosts: dict[str, list[str]] = {}
        for grant in grants:
            hosts.setdefault(grant.name, []).append(f"{grant.origin} in {grant.collection.slug}")
        choices = [("", "none")] + [(name, f"{name} (for {'; '.join(where)})") for name, where in sorted(hosts.items())]
        if obj is not None and obj.credentials and obj.credentials not in hosts:
            choices.append((obj.credentials, f"{obj.credentials} (not granted: choose another)"))

        class CheckedForm(form):
            # Only the secrets an operator granted are offered (manage.py sources grant-secret).
            credentials = forms.ChoiceField(
                choices=choices, required=False, help_text=Source._meta.get_field("credentials").help_text
            )

            def clean(self):  # the service's own checks, each error on its field
                data = super().clean()
                fields = {k: data.get(k) for k in ["kind", *EDITABLE]} | ({"kind": kind} if kind else {})
                fields = {k: ("" if v is None and k not in ("owner",) else v) for k, v in fields.items()}
                fields["collection"] = collection or data.get("collection")
                try:
                    source_check(fields=fields, operator=False)
                except CairnError as exc:
                    raise ValidationError({exc.field if exc.field in self.fields else None: exc.message}) from None
                return data

        return CheckedForm

    def save_model(self, request, obj, form, change):
        values = {f: form.cleaned_data[f] for f in EDITABLE if f in form.cleaned_data}
        if change:
            source_update(source=Source.objects.get(pk=obj.pk), actor=request.user, **values)
        else:
            obj.pk = source_create(actor=request.user, collection=form.cleaned_data["collection"],
                                   name=form.cleaned_data["name"], kind=form.cleaned_data["kind"], **values).pk  # fmt: skip
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        source_delete(source=obj, actor=request.user)

    def delete_queryset(self, request, queryset):
        for source in queryset:
            source_delete(source=source, actor=request.user)

    @admin.action(description="Sync selected sources now (queued for the workers)")
    def sync_now(self, request, queryset):
        with transaction.atomic():
            for source in queryset.filter(enabled=True):
                source_sync_enqueue(source=source, actor=request.user)
        self.message_user(request, f"Queued {queryset.filter(enabled=True).count()} sync(s).", level=messages.INFO)


@admin.register(SecretGrant)
class SecretGrantAdmin(ReadOnlyAdmin, CuratedAdmin):
    """What curators may see of the secrets granted to their collections; operators grant and
    revoke them on the command line (manage.py sources grant-secret / revoke-secret), audited."""

    list_display = ["name", "collection", "scheme", "host", "port", "granted_by", "created_at"]
    list_filter = ["collection", "scheme"]
    list_select_related = ["collection", "granted_by"]
    search_fields = ["name", "host"]


@admin.register(SyncRun)
class SyncRunAdmin(ReadOnlyAdmin, CuratedAdmin):
    curated_through = "source__collection"
    list_display = ["started_at", "source", "status", "listed", "added", "updated", "unchanged", "retracted",
                    "failed", "restricted", "duration"]  # fmt: skip
    list_filter = ["status", "source"]
    list_select_related = ["source"]
    search_fields = ["source__name", "error"]
    raw_id_fields = ["source", "requested_by"]
    date_hierarchy = "started_at"


@admin.register(SourceItem)
class SourceItemAdmin(ReadOnlyAdmin, CuratedAdmin):
    curated_through = "source__collection"
    list_display = ["key", "source", "version", "document", "updated_at"]
    list_filter = ["source"]
    list_select_related = ["source", "document"]
    search_fields = ["key", "sha256"]
    raw_id_fields = ["source", "document", "seen_run", "queued_run"]
    exclude = ["fetched"]
