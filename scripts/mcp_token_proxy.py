"""A loopback reverse proxy that adds ``Authorization: Bearer <token>`` — how an operator
fronts the MCP server for a client that sends no token (the conformance suite in
``make test-mcp``). Authentication stays on: the proxy only supplies the credential.

Usage: python scripts/mcp_token_proxy.py LISTEN_PORT UPSTREAM_PORT  (token on stdin)

Every request is forwarded to 127.0.0.1:UPSTREAM_PORT with its method, path, headers
(``Host`` and ``Origin`` untouched, so DNS-rebinding refusals still reach the client) and
body; the answer comes back as is. Prints ``ready`` once listening.
"""

import http.client
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"}


def handler(upstream_port: int, token: str):
    class Forward(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            headers["Authorization"] = f"Bearer {token}"
            upstream = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=60)
            try:
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                payload = answer.read()
            finally:
                upstream.close()
            self.send_response(answer.status, answer.reason)
            for name, value in answer.getheaders():
                if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_DELETE = do_OPTIONS = _forward

        def log_message(self, *args):  # quiet: the leg prints its own lines
            pass

    return Forward


def main() -> None:
    listen, upstream = int(sys.argv[1]), int(sys.argv[2])
    token = sys.stdin.readline().strip()
    server = ThreadingHTTPServer(("127.0.0.1", listen), handler(upstream, token))
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
