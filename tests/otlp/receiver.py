"""A real OTLP/HTTP endpoint for the tests: POST /v1/traces, the protobuf decoded with opentelemetry-proto."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def value(v) -> object:
    which = v.WhichOneof("value")
    return getattr(v, which) if which else None


@dataclass
class Span:
    trace_id: str
    span_id: str
    parent_id: str
    name: str
    kind: int
    start: int
    end: int
    attributes: dict
    events: list[tuple[str, dict, int]]
    status: int
    message: str
    resource: dict


@dataclass
class Receiver:
    port: int = 0
    spans: list[Span] = field(default_factory=list)
    requests: int = 0
    arrived: threading.Condition = field(default_factory=threading.Condition)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def take(self, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        got = []
        for rs in request.resource_spans:
            resource = {a.key: value(a.value) for a in rs.resource.attributes}
            for ss in rs.scope_spans:
                for s in ss.spans:
                    got.append(
                        Span(
                            s.trace_id.hex(),
                            s.span_id.hex(),
                            s.parent_span_id.hex(),
                            s.name,
                            s.kind,
                            s.start_time_unix_nano,
                            s.end_time_unix_nano,
                            {a.key: value(a.value) for a in s.attributes},
                            [
                                (e.name, {a.key: value(a.value) for a in e.attributes}, e.time_unix_nano)
                                for e in s.events
                            ],
                            s.status.code,
                            s.status.message,
                            resource,
                        )
                    )
        with self.arrived:
            self.spans += got
            self.requests += 1
            self.arrived.notify_all()

    def wait_for(self, check, seconds: float = 30.0) -> None:
        with self.arrived:
            assert self.arrived.wait_for(lambda: check(self.spans), seconds), (
                f"{len(self.spans)} spans arrived"
            )


def handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
                self.send_response(404)
                self.end_headers()
                return
            receiver.take(body)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args) -> None:
            pass

    return Handler


@contextmanager
def receiving(receiver: Receiver | None = None, port: int = 0) -> Iterator[Receiver]:
    """A receiver on 127.0.0.1 (on `port`, or a free one) until the block ends."""
    receiver = receiver or Receiver()
    server = ThreadingHTTPServer(("127.0.0.1", port or receiver.port), handler(receiver))
    receiver.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
