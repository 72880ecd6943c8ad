"""gunicorn settings for Cairn's production web server (`make serve`, deploy/cairn-web.service):
`gunicorn -c config/gunicorn.py`. Threads (gthread), workers and threads from the environment
(config/serving.py), each worker with its share of the cores for torch and a connection pool of one
connection per thread. SIGTERM is a graceful stop: no new connections, in-flight requests finish
(up to CAIRN_WEB_GRACEFUL_TIMEOUT seconds), then the workers exit."""

import os

from common.env import env_int, env_str
from config.serving import WEB_THREADS, WEB_WORKERS, torch_threads_per_worker

# Set before the workers import Django: they inherit them.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("CAIRN_DB_APPLICATION_NAME", "cairn-web")
os.environ.setdefault("CAIRN_DB_ROLE", "app")  # the application's role: it cannot erase the audit trail
os.environ.setdefault("CAIRN_DB_POOL", "true")
os.environ.setdefault("CAIRN_DB_POOL_SIZE", str(WEB_THREADS))
os.environ.setdefault("CAIRN_TORCH_THREADS", str(torch_threads_per_worker()))

wsgi_app = "config.wsgi:application"
bind = env_str("CAIRN_BIND", "127.0.0.1:8000").split(",")
worker_class = "config.gunicorn_worker.DrainingThreadWorker"  # gthread, drained on stop
workers = WEB_WORKERS
threads = WEB_THREADS
# A deep-mode answer with an LLM can take a minute; a worker silent for longer than this is restarted.
timeout = env_int("CAIRN_WEB_TIMEOUT", 180, minimum=10)
graceful_timeout = env_int("CAIRN_WEB_GRACEFUL_TIMEOUT", 60, minimum=1)
keepalive = 5
# Forwarded headers (X-Forwarded-Proto, -For) are believed only from these proxy addresses.
forwarded_allow_ips = env_str("CAIRN_FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
# Models load per worker after the fork: torch's thread pools do not survive a fork.
preload_app = False
accesslog = env_str("CAIRN_ACCESS_LOG", "-") or None
errorlog = "-"
loglevel = env_str("CAIRN_LOG_LEVEL", "info").lower()
control_socket_disable = True  # no control socket left in the working directory
proc_name = "cairn-web"
