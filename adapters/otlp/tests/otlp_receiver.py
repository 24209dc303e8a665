"""Runs oteltest's OTLP/HTTP sink (PyPI `oteltest`) for the telering-otlp tests.

The sink decodes each /v1/metrics request with the official `opentelemetry-proto`
package; this script prints one JSON line per request with the cumulative sums by
metric name and agent_name, and the resource attributes, then flushes stdout. For
each /v1/traces request it prints one line {"spans": [...]}: each span's trace and
span ids in hex, name, kind, start and end (Unix ns) and attributes.

    python otlp_receiver.py PORT [--front | --unavailable N | --refuse | --script LIST]

With PORT 0 the receiver binds a port the system chooses and, once it accepts
connections, prints {"listening": PORT} as its first line. Its own second port (the
sink behind a front) is always chosen that way, after the front is bound, so no other
process can take either port between choosing and binding it.

With --unavailable N, a small front on PORT answers the first N requests with
503 and `Retry-After: 1`, then forwards every request unchanged to the sink (on a
second loopback port) and relays its status: the sink itself cannot answer 503.
With --refuse, the front answers every request 400 with a text body instead.
With --script, the front answers the first requests as LIST says, one comma-separated
entry per request: `STATUS` (no Retry-After), `STATUS:N` (`Retry-After: N`, in
seconds) or `STATUS:date:N` (`Retry-After` as the HTTP-date N seconds from now), then
forwards the rest. With --front alone it forwards every request. The front prints one
line per request it received: {"answered": STATUS, "t": monotonic seconds at arrival,
"encoding": its Content-Encoding}. It forwards a gzip body decompressed (as a collector
decodes it; the sink itself reads only plain bodies).
Everything binds 127.0.0.1 only (the sink's server class is swapped for one that
forces the loopback address).
"""

import email.utils
import gzip
import json
import logging
import socket
import sys
import threading
import time
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
        spans = []
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    attrs = {}
                    for kv in span.attributes:
                        kind = kv.value.WhichOneof("value")
                        attrs[kv.key] = getattr(kv.value, kind) if kind else None
                    spans.append(
                        {
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "name": span.name,
                            "kind": span.kind,
                            "start": span.start_time_unix_nano,
                            "end": span.end_time_unix_nano,
                            "attributes": attrs,
                            "scope": ss.scope.name,
                        }
                    )
        print(json.dumps({"spans": spans}), flush=True)

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


def parse_script(text):
    """`503:1,502,429:date:2` -> [(503, "1"), (502, None), (429, ("date", 2))]."""
    out = []
    for entry in text.split(","):
        parts = entry.split(":")
        status = int(parts[0])
        if len(parts) == 1:
            out.append((status, None))
        elif parts[1] == "date":
            out.append((status, ("date", int(parts[2]))))
        else:
            out.append((status, parts[1]))
    return out


def start_sink(port):
    """Starts oteltest's sink on `port` (0: any) and returns it once it is bound."""
    http_sink = sink.HttpSink(PrintSums(), logging.getLogger("otelsink"), port=port, daemon=False)
    http_sink.start()
    deadline = time.monotonic() + 30
    while http_sink.httpd is None:
        if not http_sink.svr_thread.is_alive() or time.monotonic() > deadline:
            raise SystemExit("the OTLP sink did not start")
        time.sleep(0.01)
    return http_sink


def main():
    port = int(sys.argv[1])
    script = []
    if "--unavailable" in sys.argv:
        script = [(503, "1")] * int(sys.argv[sys.argv.index("--unavailable") + 1])
    if "--script" in sys.argv:
        script = parse_script(sys.argv[sys.argv.index("--script") + 1])
    refuse_all = "--refuse" in sys.argv
    front = bool(script) or refuse_all or "--front" in sys.argv
    announce = port == 0
    if not front:
        http_sink = start_sink(port)
        if announce:
            print(json.dumps({"listening": http_sink.httpd.server_address[1]}), flush=True)
        http_sink.svr_thread.join()
        return
    lock = threading.Lock()
    sink_port = None  # set below, before the front serves its first request

    class Front(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def answer(self, status, headers, text=b""):
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(text)))
            self.end_headers()
            self.wfile.write(text)

        def do_POST(self):  # noqa: N802
            arrived = time.monotonic()
            body = self.rfile.read(int(self.headers["Content-Length"]))
            encoding = self.headers.get("Content-Encoding", "")
            if encoding == "gzip":
                body = gzip.decompress(body)
            with lock:
                scripted = script.pop(0) if script else None
            if refuse_all:
                print(json.dumps({"answered": 400, "t": arrived, "encoding": encoding}), flush=True)
                self.answer(400, [], b"metric names rejected by policy")
                return
            if scripted is not None:
                status, retry_after = scripted
                headers = []
                if isinstance(retry_after, tuple):
                    when = time.time() + retry_after[1]
                    headers.append(("Retry-After", email.utils.formatdate(when, usegmt=True)))
                elif retry_after is not None:
                    headers.append(("Retry-After", retry_after))
                print(json.dumps({"answered": status, "t": arrived, "encoding": encoding}), flush=True)
                self.answer(status, headers)
                return
            req = urllib.request.Request(
                f"http://127.0.0.1:{sink_port}{self.path}",
                data=body,
                headers={"Content-Type": self.headers.get("Content-Type", "")},
            )
            with urllib.request.urlopen(req, timeout=10) as resp:
                status = resp.status
            print(json.dumps({"answered": status, "t": arrived, "encoding": encoding}), flush=True)
            self.answer(status, [])

    # The front is bound first, so the sink's port, chosen after, cannot be its port;
    # a request that arrives before the sink is up waits in the front's backlog.
    front_server = LoopbackHTTPServer(("127.0.0.1", port), Front)
    sink_port = start_sink(0).httpd.server_address[1]
    if announce:
        print(json.dumps({"listening": front_server.server_address[1]}), flush=True)
    front_server.serve_forever()


if __name__ == "__main__":
    main()
