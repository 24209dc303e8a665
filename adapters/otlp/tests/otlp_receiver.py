"""Runs oteltest's OTLP/HTTP sink (PyPI `oteltest`) for the telering-otlp tests.

The sink decodes each /v1/metrics request with the official `opentelemetry-proto`
package; this script prints one JSON line per request with the cumulative sums by
metric name and agent_name, and the resource attributes, then flushes stdout.

    python otlp_receiver.py PORT [--unavailable N | --refuse]

With --unavailable N, a small front on PORT answers the first N requests with
503 and `Retry-After: 1`, then forwards every request unchanged to the sink (on a
second loopback port) and relays its status: the sink itself cannot answer 503.
With --refuse, the front answers every request 400 with a text body instead.
Everything binds 127.0.0.1 only (the sink's server class is swapped for one that
forces the loopback address).
"""

import json
import logging
import socket
import sys
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

import oteltest.sink as sink
from oteltest.sink.handler import RequestHandler


class LoopbackHTTPServer(HTTPServer):
    def __init__(self, address, handler):
        super().__init__(("127.0.0.1", address[1]), handler)


sink.HTTPServer = LoopbackHTTPServer


class PrintSums(RequestHandler):
    def handle_logs(self, request, headers):
        pass

    def handle_trace(self, request, headers):
        pass

    def handle_metrics(self, request, headers):
        sums = {}
        resource = {}
        for rm in request.resource_metrics:
            for kv in rm.resource.attributes:
                resource[kv.key] = kv.value.string_value
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.WhichOneof("data") != "sum":
                        continue
                    for p in m.sum.data_points:
                        attrs = {kv.key: kv.value.string_value for kv in p.attributes}
                        key = m.name + "|" + attrs.get("agent_name", "")
                        if "status" in attrs:
                            key += "|" + attrs["status"]
                        sums[key] = p.as_int
                        sums.setdefault("__temporality", m.sum.aggregation_temporality)
                        sums["__hostname"] = attrs.get("hostname", "")
        line = {
            "sums": sums,
            "resource": resource,
            # HTTP header names are case-insensitive.
            "content_type": next(
                (v for k, v in headers.items() if k.lower() == "content-type"), ""
            ),
        }
        print(json.dumps(line), flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    port = int(sys.argv[1])
    unavailable = 0
    if "--unavailable" in sys.argv:
        unavailable = int(sys.argv[sys.argv.index("--unavailable") + 1])
    refuse_all = "--refuse" in sys.argv
    if refuse_all:
        unavailable = 1
    logger = logging.getLogger("otelsink")
    sink_port = free_port() if unavailable else port
    http_sink = sink.HttpSink(PrintSums(), logger, port=sink_port, daemon=False)
    http_sink.start()
    if not unavailable:
        http_sink.svr_thread.join()
        return
    lock = threading.Lock()
    remaining = [unavailable]

    class Front(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):  # noqa: N802
            body = self.rfile.read(int(self.headers["Content-Length"]))
            with lock:
                refuse = remaining[0] > 0
                remaining[0] -= 1 if refuse else 0
            if refuse_all:
                print(json.dumps({"answered": 400}), flush=True)
                text = b"metric names rejected by policy"
                self.send_response(400)
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text)
                return
            if refuse:
                print(json.dumps({"answered": 503}), flush=True)
                self.send_response(503)
                self.send_header("Retry-After", "1")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            req = urllib.request.Request(
                f"http://127.0.0.1:{sink_port}{self.path}",
                data=body,
                headers={"Content-Type": self.headers.get("Content-Type", "")},
            )
            with urllib.request.urlopen(req, timeout=10) as resp:
                status = resp.status
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

    LoopbackHTTPServer(("127.0.0.1", port), Front).serve_forever()


if __name__ == "__main__":
    main()
