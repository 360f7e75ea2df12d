"""Certificates for the TLS tests, issued by a test CA (trustme) and written as PEM files, the
form both the embedded coordinator (``TlsSettings``) and Apache Kafka's PEM stores take."""

from __future__ import annotations

from pathlib import Path

import trustme
from coordinator_consumer import ConsumerGroupMember


def issue_pki(ca: trustme.CA, folder: Path) -> dict[str, Path]:
    """Write into ``folder`` the CA's certificate (``"ca"``), a server certificate for 127.0.0.1
    with its key (``"server"``) and a client certificate for ``CN=client`` with its key
    (``"client"``); returns name -> file."""
    server = ca.issue_cert("127.0.0.1")
    client = ca.issue_cert("client@example.com", common_name="client")
    files = {"ca": folder / "ca.pem", "server": folder / "server.pem", "client": folder / "client.pem"}
    ca.cert_pem.write_to_path(files["ca"])
    server.private_key_and_cert_chain_pem.write_to_path(files["server"])
    client.private_key_and_cert_chain_pem.write_to_path(files["client"])
    return files


def certified_member(bootstrap: str, pki: dict[str, Path]) -> ConsumerGroupMember:
    """A member of group ``certified`` (topic ``t``) that connects over TLS with the client
    certificate of ``pki`` (:func:`issue_pki`)."""
    return ConsumerGroupMember(
        "certified",
        bootstrap,
        topics=["t"],
        security_protocol="SSL",
        ssl_cafile=str(pki["ca"]),
        ssl_certfile=str(pki["client"]),
    )
