"""Pages about the corpus a reader may open from an answer."""

from functools import partial

from csp.decorators import csp_exempt
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404, render

from corpus import originals
from corpus.selectors import document_list, document_passages, document_with_original


@login_required
def document_page(request, document_id: int):
    """A document as its readers may read it: title, metadata and the full text, each chunk
    anchored (#chunk-ID) so a source card opens it at the cited passage. Others: 404."""
    document = get_object_or_404(document_list(user=request.user).select_related("original"), id=document_id)
    context = {
        "document": document,
        "passages": document_passages(document),
        "original_url": originals.document_original_url(document),
    }
    return render(request, "document.html", context)


# Not the pages' policy: it is for HTML, and a browser's PDF viewer (a plugin) can be refused by its
# `object-src 'none'` on the PDF's own response. Every other original is an attachment, never rendered.
@csp_exempt()
@login_required
def document_original(request, document_id: int):
    """The file a document was read from, to its readers: a PDF inline (the browser's viewer opens
    it, at #page=N), anything else as a download. Others, and a document with no file: 404."""
    document = _original_or_404(request.user, document_id)
    return original_response(document)


def _original_or_404(user, document_id: int):
    document = document_with_original(user=user, document_id=document_id)
    if document is None:
        raise Http404("No such original.")
    return document


def original_response(document) -> FileResponse:
    """The stored original as a response (shared with the API): its type, a safe file name, inline
    only for a PDF (an HTML or SVG file rendered from this origin could run script)."""
    original = document.original
    try:
        handle = original.file.open("rb")
    except FileNotFoundError as exc:  # the row outlived its file (a storage emptied by hand)
        raise Http404("No such original.") from exc
    response = FileResponse(
        handle,
        content_type=original.mime_type,
        as_attachment=original.mime_type != originals.PDF,
        filename=originals.original_filename(document),
    )
    response["Cache-Control"] = "private, no-cache"  # a reader's document: no shared cache keeps it
    return response


@login_required
def document_original_view(request, document_id: int):
    """A deck's slide (?slide=N) or a workbook's sheet and rows (?sheet=NAME&row=N&to=M) read again
    from the stored original: what a browser cannot open at a place. 404 as the original is."""
    document = _original_or_404(request.user, document_id)
    original, url = document.original, partial(originals.original_url, document.id, document.original.mime_type)
    context = {"document": document, "download_url": originals.download_url(document.id)}
    try:
        if original.mime_type == originals.PPTX:
            slide = originals.original_slide(original, _number(request.GET.get("slide"), default=1))
            context["slide"] = slide
            context["previous_url"] = url({"slide": slide.number - 1}) if slide.number > 1 else None
            context["next_url"] = url({"slide": slide.number + 1}) if slide.number < slide.count else None
        elif original.mime_type == originals.XLSX:
            first = _number(request.GET.get("row"), default=None)
            last = _number(request.GET.get("to"), default=first)
            cited = (first, max(first, last)) if first else None
            sheet = originals.original_sheet(original, request.GET.get("sheet"), cited)
            context["sheet"] = sheet
            context["sheets"] = [(name, url({"sheet": name})) for name in sheet.names]
        else:
            raise Http404("Only a presentation or a workbook has a view; open the original itself.")
    except originals.NotInOriginal as exc:
        raise Http404(str(exc)) from exc
    return render(request, "original_view.html", context)


def _number(value: str | None, *, default: int | None) -> int | None:
    """A slide or row number from the query string; a malformed one is a link to nothing (404)."""
    if value is None or value == "":
        return default
    if not value.isdigit() or not 1 <= int(value) <= 10_000_000:
        raise Http404("No such place in the original.")
    return int(value)
