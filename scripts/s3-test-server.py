"""An S3-compatible server on loopback for the object storage tests: moto's
S3 (its server mode's WSGI application) behind a gate that checks AWS
Signature V4 the way S3 does.

Why the gate: moto stores, lists, ranges and deletes like S3, but it does
not check signatures at all unless IAM simulation is on, and even then it
checks only the Authorization header: a presigned URL is never verified
(any signature, any expiry passes) and with IAM on it fails with a 500. A
test that an expired or tampered URL is refused would pass against moto
alone for no reason. So every request goes through SigV4Gate first, which
refuses, with S3's status and error code:

- a request with neither an Authorization header nor X-Amz-Signature (403 AccessDenied);
- an unknown access key (403 InvalidAccessKeyId) or session token (403 InvalidToken);
- a scope for another region or service (400 AuthorizationHeaderMalformed /
  AuthorizationQueryParametersError);
- a presigned URL past X-Amz-Date + X-Amz-Expires (403 AccessDenied,
  "Request has expired"), or with X-Amz-Expires outside 1..604800 (400);
- a header-signed request more than 15 minutes off the clock (403 RequestTimeTooSkewed);
- a body whose SHA-256 is not x-amz-content-sha256 (400 XAmzContentSHA256Mismatch);
- a signature that is not the one botocore computes for the request as it
  arrived on the wire: its method, raw path, raw query and the values of the
  signed headers (403 SignatureDoesNotMatch). A PUT with another
  content-length or content-type than the URL signed fails here.

The signature is recomputed with botocore's own S3SigV4Auth/S3SigV4QueryAuth,
an implementation independent of the Swift signer under test. `check` proves
the gate itself right before the Swift tests rely on it: requests botocore
signs with the right key pass, and the same with a wrong key, an expired URL
or a changed header are refused.

    python scripts/s3-test-server.py serve --port 0      # prints "listening PORT"
    python scripts/s3-test-server.py check --endpoint http://127.0.0.1:PORT --bucket NAME

Both read the credentials from S3_TEST_ACCESS_KEY_ID and S3_TEST_SECRET_ACCESS_KEY.
Run from its pinned environment: scripts/lib/python-venv s3-test-server.
"""

import argparse
import datetime
import hashlib
import hmac
import io
import os
import sys
import time
import urllib.error
import urllib.request
from urllib.parse import parse_qsl

from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

REGION = "us-east-1"
MAX_SKEW_SECONDS = 15 * 60
MAX_EXPIRES = 604800


class Refusal(Exception):
    def __init__(self, status, code, message):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class SigV4Gate:
    """WSGI middleware: verifies Signature V4, then hands the request to moto."""

    def __init__(self, app, secrets, region=REGION, clock=time.time):
        self.app, self.secrets, self.region, self.clock = app, secrets, region, clock

    def __call__(self, environ, start_response):
        try:
            self.verify(environ)
        except Refusal as refusal:
            body = (
                '<?xml version="1.0" encoding="UTF-8"?>\n'
                f"<Error><Code>{refusal.code}</Code><Message>{refusal.message}</Message></Error>"
            ).encode()
            if environ["REQUEST_METHOD"] == "HEAD":
                body = b""
            start_response(
                f"{refusal.status} {'Forbidden' if refusal.status == 403 else 'Bad Request'}",
                [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))],
            )
            return [body]
        return self.app(environ, start_response)

    def verify(self, environ):
        raw_uri = environ.get("RAW_URI") or environ.get("REQUEST_URI")
        raw_path, _, raw_query = raw_uri.partition("?")
        headers = {
            key[5:].replace("_", "-").lower(): value for key, value in environ.items() if key.startswith("HTTP_")
        }
        for key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            if environ.get(key):
                headers[key.replace("_", "-").lower()] = environ[key]
        query = dict(parse_qsl(raw_query, keep_blank_values=True))
        if "X-Amz-Signature" in query:
            self.verify_query(environ, raw_path, raw_query, query, headers)
        elif "authorization" in headers:
            self.verify_header(environ, raw_path, raw_query, headers)
        else:
            raise Refusal(403, "AccessDenied", "Anonymous requests are not allowed here")

    def credentials(self, scope, token, error):
        parts = scope.split("/")
        if len(parts) != 5 or parts[4] != "aws4_request":
            raise Refusal(400, error, "The credential scope is malformed")
        access_key, _, region, service, _ = parts
        if access_key not in self.secrets:
            raise Refusal(403, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist")
        if region != self.region or service != "s3":
            raise Refusal(400, error, f"The scope is for {region}/{service}; expecting {self.region}/s3")
        if token is not None:
            raise Refusal(403, "InvalidToken", "The provided token is malformed or otherwise invalid")
        return Credentials(access_key, self.secrets[access_key])

    @staticmethod
    def parse_time(text, error):
        try:
            moment = datetime.datetime.strptime(text, "%Y%m%dT%H%M%SZ")
        except (TypeError, ValueError):
            raise Refusal(400 if error != "AccessDenied" else 403, error, "The date is malformed") from None
        return moment.replace(tzinfo=datetime.timezone.utc).timestamp()

    def verify_query(self, environ, raw_path, raw_query, query, headers):
        error = "AuthorizationQueryParametersError"
        if query.get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256":
            raise Refusal(400, error, "X-Amz-Algorithm only supports AWS4-HMAC-SHA256")
        credentials = self.credentials(query.get("X-Amz-Credential", ""), query.get("X-Amz-Security-Token"), error)
        signed_at = self.parse_time(query.get("X-Amz-Date"), error)
        try:
            expires = int(query.get("X-Amz-Expires", ""))
        except ValueError:
            raise Refusal(400, error, "X-Amz-Expires must be a number") from None
        if not 1 <= expires <= MAX_EXPIRES:
            raise Refusal(400, error, "X-Amz-Expires must be from 1 to 604800 seconds")
        now = self.clock()
        if now > signed_at + expires:
            raise Refusal(403, "AccessDenied", "Request has expired")
        if signed_at > now + MAX_SKEW_SECONDS:
            raise Refusal(403, "AccessDenied", "Request is not valid yet")
        unsigned_query = "&".join(
            pair for pair in raw_query.split("&") if pair.partition("=")[0] != "X-Amz-Signature"
        )
        request = self.wire_request(environ, raw_path, unsigned_query, headers, query.get("X-Amz-SignedHeaders", ""))
        request.context["timestamp"] = query["X-Amz-Date"]
        auth = S3SigV4QueryAuth(credentials, "s3", self.region, expires=expires)
        self.compare(auth, request, query["X-Amz-Signature"])
        # Moto routes a request by its Authorization header's scope and checks
        # nothing else: give it one, and drop the parameters it does not know.
        environ["HTTP_AUTHORIZATION"] = (
            f"AWS4-HMAC-SHA256 Credential={credentials.access_key}/{query['X-Amz-Date'][:8]}/{self.region}/s3/"
            "aws4_request, SignedHeaders=host, Signature=verified-by-gate"
        )
        kept = "&".join(pair for pair in raw_query.split("&") if not pair.startswith("X-Amz-"))
        environ["QUERY_STRING"] = kept
        for key in ("RAW_URI", "REQUEST_URI"):
            if key in environ:
                environ[key] = raw_path + ("?" + kept if kept else "")

    def verify_header(self, environ, raw_path, raw_query, headers):
        error = "AuthorizationHeaderMalformed"
        algorithm, _, fields = headers["authorization"].partition(" ")
        parts = dict(
            part.strip().partition("=")[::2] for part in fields.split(",") if "=" in part
        )
        if algorithm != "AWS4-HMAC-SHA256" or not {"Credential", "SignedHeaders", "Signature"} <= parts.keys():
            raise Refusal(400, error, "The authorization header is malformed")
        credentials = self.credentials(parts["Credential"], headers.get("x-amz-security-token"), error)
        signed_at = self.parse_time(headers.get("x-amz-date"), "AccessDenied")
        if abs(self.clock() - signed_at) > MAX_SKEW_SECONDS:
            raise Refusal(403, "RequestTimeTooSkewed", "The difference between the request time and now is too large")
        content_sha256 = headers.get("x-amz-content-sha256")
        if content_sha256 is None:
            raise Refusal(400, "InvalidRequest", "Missing required header for this request: x-amz-content-sha256")
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(body)
        if content_sha256 != "UNSIGNED-PAYLOAD" and content_sha256 != hashlib.sha256(body).hexdigest():
            raise Refusal(400, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match")
        request = self.wire_request(environ, raw_path, raw_query, headers, parts["SignedHeaders"])
        request.context["timestamp"] = headers["x-amz-date"]
        self.compare(S3SigV4Auth(credentials, "s3", self.region), request, parts["Signature"])

    @staticmethod
    def wire_request(environ, raw_path, raw_query, headers, signed_names):
        names = [name for name in signed_names.split(";") if name]
        if "host" not in names:
            raise Refusal(403, "AccessDenied", "host must be a signed header")
        missing = [name for name in names if name not in headers]
        if missing:
            raise Refusal(403, "SignatureDoesNotMatch", f"Signed headers missing from the request: {missing}")
        url = f"http://{headers['host']}{raw_path}" + (f"?{raw_query}" if raw_query else "")
        return AWSRequest(
            method=environ["REQUEST_METHOD"], url=url, headers={name: headers[name] for name in names}
        )

    @staticmethod
    def compare(auth, request, signature):
        canonical = auth.canonical_request(request)
        expected = auth.signature(auth.string_to_sign(request, canonical), request)
        if not hmac.compare_digest(expected, signature):
            raise Refusal(
                403, "SignatureDoesNotMatch",
                "The request signature we calculated does not match the signature you provided",
            )


def secrets_from_environment():
    return {os.environ["S3_TEST_ACCESS_KEY_ID"]: os.environ["S3_TEST_SECRET_ACCESS_KEY"]}


def serve(arguments):
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    app = SigV4Gate(DomainDispatcherApplication(create_backend_app), secrets_from_environment())
    server = make_server(arguments.host, arguments.port, app, threaded=True)
    print(f"listening {server.server_port}", flush=True)
    server.serve_forever()


def check(arguments):
    """The gate accepts what botocore signs, and refuses what S3 would refuse."""
    import botocore.session
    from botocore.config import Config

    access_key, secret = next(iter(secrets_from_environment().items()))

    def client(secret_key):
        return botocore.session.get_session().create_client(
            "s3", region_name=REGION, endpoint_url=arguments.endpoint,
            aws_access_key_id=access_key, aws_secret_access_key=secret_key,
            config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
        )

    def status(url, method="GET", data=None, headers=None):
        request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    failures = []

    def expect(what, got, want):
        print(f"  {'ok ' if got == want else 'FAIL'} {what}: {got}")
        if got != want:
            failures.append(what)

    good, bad = client(secret), client(secret + "x")
    bucket, key = arguments.bucket, "gate-check/object.txt"
    good.create_bucket(Bucket=bucket)
    good.put_object(Bucket=bucket, Key=key, Body=b"checked", ContentType="text/plain")
    expect("header-signed HEAD with the right key", good.head_object(Bucket=bucket, Key=key)["ContentLength"], 7)
    try:
        bad.head_object(Bucket=bucket, Key=key)
        expect("header-signed HEAD with a wrong key", 200, 403)
    except bad.exceptions.ClientError as error:
        expect("header-signed HEAD with a wrong key", error.response["ResponseMetadata"]["HTTPStatusCode"], 403)
    expect("unsigned GET", status(f"{arguments.endpoint}/{bucket}/{key}"), 403)
    get_url = good.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=60)
    expect("presigned GET", status(get_url), 200)
    expect("presigned GET with a changed signature", status(get_url[:-1] + ("0" if get_url[-1] != "0" else "1")), 403)
    wrong_url = bad.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=60)
    expect("presigned GET signed with a wrong key", status(wrong_url), 403)
    short_url = good.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=1)
    time.sleep(2.1)
    expect("presigned GET after it expired", status(short_url), 403)
    put_url = good.generate_presigned_url(
        "put_object", Params={"Bucket": bucket, "Key": key, "ContentType": "text/plain", "ContentLength": 4},
        ExpiresIn=60,
    )
    expect("presigned PUT as signed", status(put_url, "PUT", b"four", {"Content-Type": "text/plain"}), 200)
    expect("presigned PUT with another length", status(put_url, "PUT", b"five!", {"Content-Type": "text/plain"}), 403)
    expect("presigned PUT with another type", status(put_url, "PUT", b"four", {"Content-Type": "text/html"}), 403)
    good.delete_object(Bucket=bucket, Key=key)
    if failures:
        print(f"the gate is wrong: {', '.join(failures)}", file=sys.stderr)
        sys.exit(1)
    print("the gate accepts botocore's signatures and refuses the altered ones")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    serve_parser = commands.add_parser("serve")
    serve_parser.add_argument("--host", default="127.0.0.1")
    serve_parser.add_argument("--port", type=int, default=0)
    check_parser = commands.add_parser("check")
    check_parser.add_argument("--endpoint", required=True)
    check_parser.add_argument("--bucket", required=True)
    arguments = parser.parse_args()
    serve(arguments) if arguments.command == "serve" else check(arguments)


if __name__ == "__main__":
    main()
