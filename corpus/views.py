"""Pages about the corpus a reader may open from an answer."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, render

from corpus.selectors import document_list, document_passages


@login_required
def document_page(request, document_id: int):
    """A document as its readers may read it: title, metadata and the full text, each chunk
    anchored (#chunk-ID) so a source card opens it at the cited passage. Others: 404."""
    document = get_object_or_404(document_list(user=request.user), id=document_id)
    return render(request, "document.html", {"document": document, "passages": document_passages(document)})
