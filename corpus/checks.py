"""System checks run at start-up (every manage.py command, the web server, the worker)."""

from django.conf import settings
from django.core.checks import Error, Warning, register


@register()
def ocr_ready(app_configs=None, **kwargs):
    """Scanned PDF pages need Tesseract and its data for CAIRN_OCR_LANGUAGES. Missing, such pages
    are refused (text PDFs still read): a warning, or an error when CAIRN_OCR_LANGUAGES was set,
    since someone then meant OCR to run."""
    from readers.pdf import missing_languages, tesseract_path

    problem = Error if settings.CAIRN_OCR_LANGUAGES_SET else Warning
    command = settings.CAIRN_TESSERACT
    if not tesseract_path(command):
        return [
            problem(
                f"Tesseract ({command}) is not installed: scanned PDF pages cannot be read.",
                hint="Install tesseract-ocr and the language data (Debian: apt-get install tesseract-ocr "
                "tesseract-ocr-eng), or set CAIRN_TESSERACT to its path.",
                id="corpus.E001" if problem is Error else "corpus.W001",
            )
        ]
    if missing := missing_languages(command, settings.CAIRN_OCR_LANGUAGES):
        return [
            problem(
                f"Tesseract has no data for {', '.join(missing)} (CAIRN_OCR_LANGUAGES={settings.CAIRN_OCR_LANGUAGES}):"
                " scanned PDF pages cannot be read.",
                hint=f"Install {', '.join(f'tesseract-ocr-{m}' for m in missing)}, or change CAIRN_OCR_LANGUAGES.",
                id="corpus.E002" if problem is Error else "corpus.W002",
            )
        ]
    return []
