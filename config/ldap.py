"""LDAP / Active Directory sign-in settings for django-auth-ldap, from CAIRN_LDAP_* (see
deploy/README.md): bind (a service account, or anonymous), user search, group search, groups
mirrored into Django groups at every sign-in (Cairn's own curators group aside: a directory group,
CAIRN_LDAP_CURATORS_GROUP, decides who is in it; accounts/directory.py)."""

from __future__ import annotations


def ldap_settings(
    *, uri: str, bind_dn: str = "", bind_password: str = "", user_base: str, user_filter: str = "(uid=%(user)s)",
    group_base: str, group_filter: str = "(objectClass=groupOfNames)", curators_group: str = "",
    keep_groups: tuple[str, ...] = (),
) -> dict:  # fmt: skip
    try:
        import ldap
        from django_auth_ldap.config import GroupOfNamesType, LDAPSearch
    except ImportError as exc:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(
            "CAIRN_LDAP_URI is set but python-ldap is not installed: apt-get install libldap2-dev libsasl2-dev, "
            "then make venv (or pip install -r requirements-ldap.txt)"
        ) from exc

    return {
        "AUTH_LDAP_SERVER_URI": uri,
        "AUTH_LDAP_BIND_DN": bind_dn,
        "AUTH_LDAP_BIND_PASSWORD": bind_password,
        "AUTH_LDAP_USER_SEARCH": LDAPSearch(user_base, ldap.SCOPE_SUBTREE, user_filter),
        "AUTH_LDAP_GROUP_SEARCH": LDAPSearch(group_base, ldap.SCOPE_SUBTREE, group_filter),
        # "member" holds DNs in groupOfNames and in Active Directory's group alike.
        "AUTH_LDAP_GROUP_TYPE": GroupOfNamesType(name_attr="cn"),
        "AUTH_LDAP_MIRROR_GROUPS_EXCEPT": list(keep_groups),
        "AUTH_LDAP_USER_ATTR_MAP": {"first_name": "givenName", "last_name": "sn", "email": "mail"},
        "AUTH_LDAP_ALWAYS_UPDATE_USER": True,
        "AUTH_LDAP_CONNECTION_OPTIONS": {ldap.OPT_NETWORK_TIMEOUT: 5, ldap.OPT_TIMEOUT: 10},
        "CAIRN_LDAP_CURATORS_GROUP": curators_group,
    }
