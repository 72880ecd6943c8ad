"""Source kinds by name: each a module with one connector class (sources/connectors/base.py)."""

from __future__ import annotations

from django.utils.module_loading import import_string

KINDS = {
    "folder": "sources.connectors.folder.FolderConnector",
    "website": "sources.connectors.website.WebsiteConnector",
    "git": "sources.connectors.git.GitConnector",
    "confluence": "sources.connectors.confluence.ConfluenceConnector",
}


def connector_for(source):
    """The connector that reads `source` (its kind's class, built for it)."""
    return import_string(KINDS[source.kind])(source)
