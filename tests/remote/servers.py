# SPDX-License-Identifier: BSD-2-Clause
"""servers.py - the servers the object-storage tests start on 127.0.0.1:
moto's standalone S3 server (with its signature checks), a static file
server (http.server) and a seeded fault proxy in front of either."""
import http.client
import http.server
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc=None, timeout=30.0):
    end = time.time() + timeout
    while time.time() < end:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("server exited with %s" % proc.returncode)
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("no server on port %d" % port)


class Moto:
    """moto_server on a free port. Requests are authenticated (signature and
    IAM policy) after the first three, which make the IAM user and key."""

    def __init__(self, venv, logdir):
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="3")
        for k in list(env):
            if k.startswith("AWS_"):
                del env[k]
        self.log = open(os.path.join(logdir, "moto.log"), "w")
        self.proc = subprocess.Popen(
            [os.path.join(venv, "bin", "moto_server"), "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)
        wait_port(self.port, self.proc)
        import boto3
        kw = dict(endpoint_url=self.url, region_name="us-east-1",
                  aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap")
        iam = boto3.client("iam", **kw)
        iam.create_user(UserName="seqstore-test")
        key = iam.create_access_key(UserName="seqstore-test")["AccessKey"]
        iam.put_user_policy(UserName="seqstore-test", PolicyName="all", PolicyDocument=json.dumps(
            {"Version": "2012-10-17",
             "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
        self.key_id = key["AccessKeyId"]
        self.secret = key["SecretAccessKey"]
        self.s3 = boto3.client("s3", endpoint_url=self.url, region_name="us-east-1",
                               aws_access_key_id=self.key_id, aws_secret_access_key=self.secret)

    def env(self, endpoint=None):
        return {"AWS_ACCESS_KEY_ID": self.key_id, "AWS_SECRET_ACCESS_KEY": self.secret,
                "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint or self.url}

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.log.close()


class Static:
    """http.server serving `root` (plain HTTP GETs of public objects)."""

    def __init__(self, root):
        handler = lambda *a, **k: _Quiet(*a, directory=root, **k)  # noqa: E731
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.httpd.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()


class RangeStatic:
    """A static file server of `root` that answers Range requests (one range,
    `bytes=A-` or `bytes=A-B`, 206 with Content-Range; If-Range against its
    ETag, a 200 of the whole file when it differs), over TLS when `cert` and
    `key` are given. `cut(path, n)` (n: how many GETs of this path came
    before) returns None or a byte count after which the answer's connection
    is closed. Every GET is recorded in `seen` [(path, Range header, status)]."""

    def __init__(self, root, cert=None, key=None, cut=None):
        self.root = root
        self.cut = cut or (lambda p, n: None)
        self.seen = []
        self.lock = threading.Lock()
        srv = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                path = self.path.split("?")[0]
                f = os.path.join(srv.root, path.lstrip("/"))
                rng = self.headers.get("Range")
                with srv.lock:
                    n = sum(1 for p, _, _ in srv.seen if p == path)
                if not os.path.isfile(f):
                    with srv.lock:
                        srv.seen.append((path, rng, 404))
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = open(f, "rb").read()
                st = os.stat(f)
                etag = '"%x-%x"' % (st.st_size, st.st_mtime_ns)
                start, end, status = 0, len(data), 200
                if rng and self.headers.get("If-Range", etag) == etag:
                    a, _, b = rng[len("bytes="):].partition("-")
                    start, end, status = int(a), int(b) + 1 if b else len(data), 206
                with srv.lock:
                    srv.seen.append((path, rng, status))
                self.send_response(status)
                self.send_header("ETag", etag)
                self.send_header("Accept-Ranges", "bytes")
                self.send_header("Content-Length", str(end - start))
                if status == 206:
                    self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end - 1,
                                                                           len(data)))
                self.end_headers()
                limit = srv.cut(path, n)
                if limit is not None:
                    self.wfile.write(data[start:start + limit])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(data[start:end])

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda *a: None  # a refused handshake, a cut connection
        if cert:
            import ssl
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(cert, key)
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.url = "%s://127.0.0.1:%d" % ("https" if cert else "http", self.port)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()


def self_signed(dirname):
    """A self-signed certificate for 127.0.0.1 made by `openssl req`: (cert,
    key) paths."""
    cert, key = os.path.join(dirname, "cert.pem"), os.path.join(dirname, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


class FaultProxy:
    """An HTTP proxy in front of `upstream` (host:port) that answers each
    request as it is or with one fault. `plan(method, path, n)` (n: how many
    requests of this path came before) returns None or one of "drop" (close
    without an answer), "503" (SlowDown), "truncate" (half the body under the
    full Content-Length), "stall" (the headers and some bytes, then nothing for
    `stall_s`), "slow" (the body in small pieces, slowly), "hold" (nothing for
    `stall_s`, then "drop": the request never reaches the server). Every request is
    counted in `seen` [(method, path)]. The Host header is passed on, so that
    S3 signatures still match."""

    def __init__(self, upstream_port, plan=None, seed=1, stall_s=3.0):
        self.upstream = upstream_port
        self.plan = plan or (lambda m, p, n: None)
        self.rng = random.Random(seed)
        self.stall_s = stall_s
        self.seen = []
        self.lock = threading.Lock()
        self.inflight = 0      # shard GETs (*.ss) being answered now
        self.max_inflight = 0  # the most at once
        proxy = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def handle_one(self):
                n_len = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n_len) if n_len else b""
                path = self.path.split("?")[0]
                with proxy.lock:
                    n = sum(1 for m, p in proxy.seen if m == self.command and p == path)
                    proxy.seen.append((self.command, path))
                fault = proxy.plan(self.command, path, n)
                if fault == "hold":  # an upload in flight that never reaches the server
                    time.sleep(proxy.stall_s)
                    fault = "drop"
                if fault == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if fault == "503":
                    x = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
                         b'<Message>Please reduce your request rate.</Message></Error>')
                    self.send_response(503)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(x)))
                    self.end_headers()
                    self.wfile.write(x)
                    return
                shard = self.command == "GET" and path.endswith(".ss")
                if shard:
                    with proxy.lock:
                        proxy.inflight += 1
                        proxy.max_inflight = max(proxy.max_inflight, proxy.inflight)
                try:
                    self.forward(body, fault)
                finally:
                    if shard:
                        with proxy.lock:
                            proxy.inflight -= 1

            def forward(self, body, fault):
                c = http.client.HTTPConnection("127.0.0.1", proxy.upstream, timeout=60)
                hdrs = {k: v for k, v in self.headers.items()}
                c.request(self.command, self.path, body=body, headers=hdrs)
                r = c.getresponse()
                data = r.read()
                c.close()
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection",
                                         "server", "date"):
                        self.send_header(k, v)
                # a HEAD's answer has no body but the object's length
                length = r.getheader("Content-Length") if self.command == "HEAD" else None
                self.send_header("Content-Length", length or str(len(data)))
                if fault in ("truncate", "stall"):
                    self.send_header("Connection", "close")
                self.end_headers()
                if self.command == "HEAD":
                    return
                if fault == "truncate":
                    self.wfile.write(data[:len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                if fault == "stall":
                    self.wfile.write(data[:min(len(data) // 2, 4096)])
                    self.wfile.flush()
                    time.sleep(proxy.stall_s)
                    self.close_connection = True
                    return
                if fault == "slow":
                    for i in range(0, len(data), 65536):
                        self.wfile.write(data[i:i + 65536])
                        self.wfile.flush()
                        time.sleep(0.05)
                    return
                self.wfile.write(data)

            def do_GET(self):
                self.handle_one()

            do_PUT = do_POST = do_DELETE = do_HEAD = do_GET

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda *a: None  # a client that went away (the faults)
        self.port = self.httpd.server_address[1]
        self.url = "http://127.0.0.1:%d" % self.port
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def count(self, method, suffix):
        with self.lock:
            return sum(1 for m, p in self.seen if m == method and p.endswith(suffix))

    def stop(self):
        self.httpd.shutdown()
