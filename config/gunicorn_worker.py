"""gunicorn's threaded worker, with a graceful stop that leaves no connection behind.

On SIGTERM gunicorn's gthread worker stops accepting and lets its in-flight requests finish, but
it keeps the listening socket open until they have: meanwhile the kernel still completes the
handshake of new connections into the socket's backlog, where nobody accepts them, and resets
them all when the socket finally closes. Clients see a request sent and the connection dropped.
This worker, when it stops accepting, first takes every connection already waiting (they are
served like any other) and then closes its copy of the listening socket, so the next client is
refused at once and can retry elsewhere (the master closed its own copy before signalling)."""

from gunicorn.workers.gthread import ThreadWorker


class DrainingThreadWorker(ThreadWorker):
    def set_accept_enabled(self, enabled):
        stopping = not enabled and not self.alive
        if stopping and self._accepting:
            for listener in self.sockets:
                while True:
                    accepted = self.nr_conns
                    self.accept(listener)  # non-blocking: returns at once when nothing waits
                    if self.nr_conns == accepted:
                        break
        super().set_accept_enabled(enabled)
        if stopping:
            for listener in self.sockets:
                listener.close()  # gunicorn's socket wrapper: closing again at exit is a no-op
