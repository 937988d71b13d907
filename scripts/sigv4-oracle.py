"""What botocore signs for the requests ScrollbackObjectStorage signs.

Prints, as JSON, a list of cases: each case's inputs (what the Swift test
feeds S3ObjectStore) and what botocore makes of the same inputs: for a
presigned URL, `generate_presigned_url` of a path- or virtual-style client;
for a header-signed request, `S3SigV4Auth.add_auth`. The clock is fixed per
case, so the output is the same on every run with the same botocore.

The committed copy is Tests/ScrollbackObjectStorageTests/Fixtures/
botocore-sigv4.json, which the Swift tests compare the signer with;
scripts/check-sigv4 runs this again (from its pinned environment,
scripts/requirements/sigv4-oracle.txt) and fails if the two differ.

    python scripts/sigv4-oracle.py > FILE
"""

import datetime
import json
import sys
from unittest import mock

import botocore
import botocore.auth
import botocore.session
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.utils import percent_encode

AWS_DOCS_ACCESS_KEY = "AKIAIOSFODNN7EXAMPLE"
AWS_DOCS_SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SESSION_TOKEN = "FQoGZXIvYXdzEXAMPLE//////////wEaDOKEN+with/slashes=="
LOOPBACK = "http://127.0.0.1:9000"

# Each case: a storage URL, an endpoint, a region, a style, credentials and a
# time, and then either a presigned upload, a presigned download, or a
# header-signed request the server makes.
CASES = [
    {
        "name": "upload signs content type and length, path style on loopback",
        "kind": "presigned-upload",
        "storage_url": "s3://scrollback-test",
        "endpoint": LOOPBACK,
        "key": "uploads/01J9Z/photo.png",
        "content_type": "image/png",
        "content_length": 123456,
        "expires": 900,
    },
    {
        "name": "upload of a key that needs encoding, under a prefix, on AWS's regional endpoint",
        "kind": "presigned-upload",
        "storage_url": "s3://scrollback-attachments/tenant 1/2026",
        "endpoint": "https://s3.eu-west-1.amazonaws.com",
        "region": "eu-west-1",
        "key": "a b/\u00fcn\u00efc\u00f8d\u00e9+x$y=z&(1)!'*~.png",
        "content_type": "image/jpeg",
        "content_length": 0,
        "expires": 3600,
    },
    {
        "name": "upload with neither type nor length signed",
        "kind": "presigned-upload",
        "storage_url": "s3://scrollback-test",
        "endpoint": LOOPBACK,
        "key": "x",
        "expires": 1,
    },
    {
        "name": "upload with temporary credentials signs the session token",
        "kind": "presigned-upload",
        "storage_url": "s3://scrollback-test/attachments",
        "endpoint": "http://localhost:4566",
        "key": "c/2.gif",
        "content_type": "image/gif",
        "content_length": 42,
        "expires": 600,
        "session_token": SESSION_TOKEN,
    },
    {
        "name": "upload in virtual-host style",
        "kind": "presigned-upload",
        "storage_url": "s3://examplebucket",
        "endpoint": "https://s3.us-east-1.amazonaws.com",
        "addressing_style": "virtual",
        "key": "photos/cat.webp",
        "content_type": "image/webp",
        "content_length": 5242880,
        "expires": 900,
        "timestamp": "20261120T235959Z",
    },
    {
        "name": "download as an attachment without a file name",
        "kind": "presigned-download",
        "storage_url": "s3://scrollback-test",
        "endpoint": LOOPBACK,
        "key": "uploads/01J9Z/report.pdf",
        "inline": False,
        "response_content_disposition": "attachment",
        "expires": 300,
    },
    {
        "name": "download inline with a file name that needs both forms and a type override",
        "kind": "presigned-download",
        "storage_url": "s3://scrollback-test/attachments",
        "endpoint": LOOPBACK,
        "key": "c/1.png",
        "filename": "Caf\u00e9 \"menu\" 2026.png",
        "inline": True,
        "response_content_disposition":
            "inline; filename=\"Caf_ _menu_ 2026.png\"; filename*=UTF-8''Caf%C3%A9%20%22menu%22%202026.png",
        "response_content_type": "image/png",
        "expires": 60,
    },
    {
        "name": "download for seven days with temporary credentials, virtual-host style",
        "kind": "presigned-download",
        "storage_url": "s3://examplebucket",
        "endpoint": "https://s3.amazonaws.com",
        "addressing_style": "virtual",
        "key": "test.txt",
        "filename": "test.txt",
        "inline": False,
        "response_content_disposition": "attachment; filename=\"test.txt\"; filename*=UTF-8''test.txt",
        "expires": 604800,
        "session_token": SESSION_TOKEN,
    },
    {
        "name": "HEAD of an object",
        "kind": "signed",
        "method": "HEAD",
        "storage_url": "s3://scrollback-test",
        "endpoint": LOOPBACK,
        "key": "uploads/01J9Z/photo.png",
    },
    {
        "name": "GET of the first 64 KiB",
        "kind": "signed",
        "method": "GET",
        "storage_url": "s3://scrollback-test/attachments",
        "endpoint": LOOPBACK,
        "key": "a b/\u00fcn\u00efc\u00f8d\u00e9+1.png",
        "headers": {"range": "bytes=0-65535"},
    },
    {
        "name": "DELETE with temporary credentials, virtual-host style over https",
        "kind": "signed",
        "method": "DELETE",
        "storage_url": "s3://examplebucket",
        "endpoint": "https://s3.eu-central-1.amazonaws.com",
        "region": "eu-central-1",
        "addressing_style": "virtual",
        "key": "uploads/old.bin",
        "session_token": SESSION_TOKEN,
    },
    {
        "name": "PUT of a body, which signs its SHA-256",
        "kind": "signed",
        "method": "PUT",
        "storage_url": "s3://scrollback-test",
        "endpoint": LOOPBACK,
        "key": "test$file.text",
        "headers": {"content-type": "text/plain"},
        "body": "Welcome to Amazon S3.",
    },
]


def with_defaults(case):
    case = dict(case)
    case.setdefault("region", "us-east-1")
    case.setdefault("addressing_style", "path")
    case.setdefault("access_key_id", AWS_DOCS_ACCESS_KEY)
    case.setdefault("secret_access_key", AWS_DOCS_SECRET_KEY)
    case.setdefault("timestamp", "20130524T000000Z")
    return case


def bucket_and_key(case):
    location = case["storage_url"][len("s3://"):]
    bucket, _, prefix = location.partition("/")
    prefix = "/".join(part for part in prefix.split("/") if part)
    return bucket, (prefix + "/" if prefix else "") + case["key"]


def frozen_clock(case):
    moment = datetime.datetime.strptime(case["timestamp"], "%Y%m%dT%H%M%SZ")
    return mock.patch("botocore.auth.get_current_datetime", return_value=moment)


def presigned_url(case):
    session = botocore.session.get_session()
    client = session.create_client(
        "s3",
        region_name=case["region"],
        endpoint_url=case["endpoint"],
        aws_access_key_id=case["access_key_id"],
        aws_secret_access_key=case["secret_access_key"],
        aws_session_token=case.get("session_token"),
        config=Config(signature_version="s3v4", s3={"addressing_style": case["addressing_style"]}),
    )
    bucket, key = bucket_and_key(case)
    params = {"Bucket": bucket, "Key": key}
    if case["kind"] == "presigned-upload":
        operation = "put_object"
        if "content_type" in case:
            params["ContentType"] = case["content_type"]
        if "content_length" in case:
            params["ContentLength"] = case["content_length"]
    else:
        operation = "get_object"
        params["ResponseContentDisposition"] = case["response_content_disposition"]
        if "response_content_type" in case:
            params["ResponseContentType"] = case["response_content_type"]
    with frozen_clock(case):
        url = client.generate_presigned_url(operation, Params=params, ExpiresIn=case["expires"])
    return {"url": url}


def signed_request(case):
    bucket, key = bucket_and_key(case)
    scheme, _, authority = case["endpoint"].partition("://")
    if case["addressing_style"] == "virtual":
        url = f"{scheme}://{bucket}.{authority}/{percent_encode(key, safe='/~')}"
    else:
        url = f"{scheme}://{authority}/{bucket}/{percent_encode(key, safe='/~')}"
    body = case.get("body", "").encode("utf-8")
    request = AWSRequest(method=case["method"], url=url, headers=dict(case.get("headers", {})), data=body)
    credentials = Credentials(case["access_key_id"], case["secret_access_key"], case.get("session_token"))
    with frozen_clock(case):
        botocore.auth.S3SigV4Auth(credentials, "s3", case["region"]).add_auth(request)
    return {
        "url": request.url,
        "headers": {name.lower(): value for name, value in request.headers.items()},
    }


def main():
    output = []
    for case in map(with_defaults, CASES):
        expected = presigned_url(case) if case["kind"].startswith("presigned") else signed_request(case)
        output.append({**case, "expected": expected})
    document = {
        "generated_by": f"scripts/sigv4-oracle.py with botocore {botocore.__version__}",
        "cases": output,
    }
    json.dump(document, sys.stdout, indent=2, sort_keys=True, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
