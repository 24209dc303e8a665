"""OTLP collectors on 127.0.0.1, each on an ephemeral port: one that answers every
push with one status (500 for a broken one), one that is down, and one that accepts
and never answers. Each is a context manager giving the
`OTEL_EXPORTER_OTLP_ENDPOINT` to use."""

import http.server
import socket
import threading


class Answers:
    """A real HTTP server that reads each request and answers `status`; it counts
    the pushes it answered."""

    def __init__(self, status):
        outer = self
        self.pushes = 0
        self._lock = threading.Lock()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with outer._lock:
                    outer.pushes += 1
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.endpoint = "http://127.0.0.1:%d" % self._server.server_address[1]

    def answered(self):
        with self._lock:
            return self.pushes

    def __enter__(self):
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()


class Down:
    """A port nothing listens on: bound once to choose it, then closed, so a
    connection is refused."""

    def __init__(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.endpoint = "http://127.0.0.1:%d" % s.getsockname()[1]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


class BlackHole:
    """Accepts every connection and reads what is sent, but never answers."""

    def __init__(self):
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.endpoint = "http://127.0.0.1:%d" % self._listener.getsockname()[1]
        self._connections = []
        self._stop = threading.Event()
        self.accepted = 0

    def _accept(self):
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self._connections.append(conn)
            self.accepted += 1
            threading.Thread(target=self._swallow, args=(conn,), daemon=True).start()

    @staticmethod
    def _swallow(conn):
        try:
            while conn.recv(65536):
                pass
        except OSError:
            pass

    def __enter__(self):
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        except OSError:
            pass
        self._listener.close()
        for conn in self._connections:
            conn.close()
