"""python manage.py serve: Cairn's production server on one host (`make serve`).

Migrates, collects static files, runs `selfcheck`, then runs gunicorn (config/gunicorn.py) and the
django-q2 worker side by side until either stops. SIGTERM and SIGINT are passed on to both: gunicorn
stops accepting, finishes its in-flight requests and exits; the worker finishes its current task.
Several hosts, or separate web and worker units, run the two commands themselves (deploy/)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import connections


class Command(BaseCommand):
    help = "Migrate, check, then serve with gunicorn and a django-q2 worker (graceful on SIGTERM)."

    def add_arguments(self, parser):
        parser.add_argument("--bind", help="host:port to listen on (default CAIRN_BIND, else 127.0.0.1:8000)")
        parser.add_argument("--no-worker", action="store_true", help="serve only; run the worker elsewhere")

    def handle(self, *args, bind=None, no_worker=False, **options):
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        call_command("selfcheck")
        connections.close_all()  # this process only waits from here on; it holds no connection

        gunicorn = [sys.executable, "-m", "gunicorn", "-c", str(settings.BASE_DIR / "config" / "gunicorn.py")]
        if bind:
            gunicorn += ["--bind", bind]
        children = [subprocess.Popen(gunicorn, cwd=settings.BASE_DIR)]
        if not no_worker:
            children.append(subprocess.Popen([sys.executable, "manage.py", "qcluster"], cwd=settings.BASE_DIR))

        def pass_on(signum, frame):
            for child in children:
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)  # gunicorn's graceful stop, whatever we got

        signal.signal(signal.SIGTERM, pass_on)
        signal.signal(signal.SIGINT, pass_on)
        while all(child.poll() is None for child in children):
            time.sleep(0.2)
        pass_on(signal.SIGTERM, None)  # one stopped: stop the other too
        codes = [child.wait() for child in children]
        self.stdout.write(f"stopped: gunicorn {codes[0]}" + (f", worker {codes[1]}" if len(codes) > 1 else ""))
        if codes[0] not in (0, -signal.SIGTERM):
            sys.exit(codes[0])
