"""The reader's pages: the ask page and their own questions."""

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import render

from pipeline.selectors import answers_asked_by

HISTORY_PAGE = 25


@login_required
def ask_page(request):
    return render(request, "ask.html")


@login_required
def history_page(request):
    """My questions: the signed-in user's recorded answers, searchable, each re-opened on the ask page."""
    search = request.GET.get("q", "").strip()[:200]
    page = Paginator(answers_asked_by(user=request.user, search=search), HISTORY_PAGE).get_page(request.GET.get("page"))
    return render(request, "history.html", {"page": page, "search": search})
