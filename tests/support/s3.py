"""An S3-compatible server for tests: moto's, on 127.0.0.1, with a bucket of each test's own.

:func:`start_server` starts the server (conftest keeps one per session); :func:`use_bucket`
points the environment at it the way an installation does (``AWS_ENDPOINT_URL``, credentials,
region: nothing in a spec) and creates a fresh bucket. The credentials are fixed, made-up
values that tests look for in every message, report and ledger: they must never appear.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ACCESS_KEY_ID = "AKIATESTSONLY0EXAMPLE"
SECRET_ACCESS_KEY = "tests-only/secret+access+key/never+shown"
REGION = "us-east-1"


@dataclass
class Server:
    """A running moto server and its endpoint (``http://127.0.0.1:<port>``)."""

    server: Any
    endpoint: str

    def stop(self) -> None:
        self.server.stop()


def start_server() -> Server:
    """moto's S3-compatible server on a free port of 127.0.0.1, in a thread of this process."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return Server(server, f"http://{host}:{port}")


@dataclass
class Bucket:
    """A bucket of the test server: its name, and a client to look inside it."""

    name: str
    endpoint: str

    def uri(self, key: str) -> str:
        return f"s3://{self.name}/{key}"

    def client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION,
                            aws_access_key_id=ACCESS_KEY_ID, aws_secret_access_key=SECRET_ACCESS_KEY)

    def objects(self) -> dict[str, bytes]:
        """Every object of the bucket, by key, byte for byte; the empty ``folder/`` markers that
        pyarrow leaves when it removes an object aside."""
        client = self.client()
        listed = client.list_objects_v2(Bucket=self.name).get("Contents", [])
        return {o["Key"]: client.get_object(Bucket=self.name, Key=o["Key"])["Body"].read() for o in listed
                if not (o["Key"].endswith("/") and o["Size"] == 0)}

    def get(self, key: str) -> bytes:
        return self.client().get_object(Bucket=self.name, Key=key)["Body"].read()

    def put(self, key: str, data: bytes) -> None:
        self.client().put_object(Bucket=self.name, Key=key, Body=data)

    def uploads(self) -> list[str]:
        """The keys of the multipart uploads begun and neither completed nor aborted."""
        return [u["Key"] for u in self.client().list_multipart_uploads(Bucket=self.name).get("Uploads", [])]


def server_environment(server: Server, tmp: Path) -> dict[str, str]:
    """The environment an installation points at ``server`` with: endpoint, credentials, region;
    no profile files (under ``tmp``, absent), no instance metadata."""
    return {
        "AWS_ENDPOINT_URL": server.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": SECRET_ACCESS_KEY, "AWS_REGION": REGION, "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(tmp / "no-aws-config"), "AWS_SHARED_CREDENTIALS_FILE": str(tmp / "no-aws-credentials"),
    }


def use_bucket(server: Server, monkeypatch: pytest.MonkeyPatch, tmp: Path) -> Bucket:
    """The environment pointed at ``server`` (:func:`server_environment`) and a new bucket created there."""
    for name, value in server_environment(server, tmp).items():
        monkeypatch.setenv(name, value)
    bucket = Bucket(f"tests-{uuid.uuid4().hex[:16]}", server.endpoint)
    bucket.client().create_bucket(Bucket=bucket.name)
    return bucket
