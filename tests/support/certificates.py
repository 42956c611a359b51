"""Self-signed certificates for TLS tests, made with the openssl command line."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Certificate:
    """A certificate for ``localhost`` and 127.0.0.1, and its key (PEM files)."""

    cert_file: Path
    key_file: Path

    @property
    def pem(self) -> bytes:
        """The certificate, which a client trusts as its own root."""
        return self.cert_file.read_bytes()


def make_certificate(directory: Path) -> Certificate:
    """A fresh P-256 certificate valid for a day, self-signed, in ``directory``."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return Certificate(cert, key)
