from rest_framework.permissions import BasePermission

from corpus.selectors import user_is_curator


class IsCurator(BasePermission):
    message = "Only curators may change the corpus."

    def has_permission(self, request, view) -> bool:
        return user_is_curator(request.user)
