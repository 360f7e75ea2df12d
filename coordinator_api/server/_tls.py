"""TLS for the embedded coordinator's listener: Kafka's ``SSL`` security protocol."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from coordinator_api._errors import ConfigurationError

ClientAuth = Literal["none", "requested", "required"]

_VERIFY: dict[str, ssl.VerifyMode] = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}


@dataclass(frozen=True, kw_only=True)
class TlsSettings:
    """A listener that speaks TLS (Kafka's ``security.protocol=SSL``), as a broker's ``ssl.*``
    settings describe one, in PEM files.

    Clients connect with kafka-python's ``security_protocol="SSL"`` and ``ssl_cafile``,
    librdkafka's ``security.protocol=ssl`` and ``ssl.ca.location``, Java's
    ``security.protocol=SSL`` with a PEM truststore; this project's members take kafka-python's
    settings as connection options (``Coordinator(..., security_protocol="SSL",
    ssl_cafile=...)``).

    :param certfile: the server's certificate chain (``ssl.keystore``), PEM; it must name the
        address clients connect to (a subject alternative name), since clients verify it.
    :param keyfile: its private key, PEM; None if ``certfile`` holds it too.
    :param password: the key's password, if it is encrypted.
    :param cafile: the certificates client certificates are checked against
        (``ssl.truststore``); needed for ``client_auth`` other than ``"none"``.
    :param client_auth: ``ssl.client.auth``: ``"none"``, ``"requested"`` (a client may present a
        certificate) or ``"required"`` (a client without a valid one is refused at the handshake).
    :raises ConfigurationError: a file that cannot be read, a key that does not match, or
        client authentication without ``cafile``.
    """

    certfile: str | Path
    keyfile: str | Path | None = None
    password: str | None = None
    cafile: str | Path | None = None
    client_auth: ClientAuth = "none"

    def __post_init__(self) -> None:
        if self.client_auth not in _VERIFY:
            raise ConfigurationError(
                f"client_auth must be one of {', '.join(_VERIFY)}, got {self.client_auth!r}"
            )
        if self.client_auth != "none" and self.cafile is None:
            raise ConfigurationError(
                f"client_auth={self.client_auth!r} needs cafile, to check clients against"
            )
        self.context()  # every file read and checked now, not at the first connection

    def context(self) -> ssl.SSLContext:
        """The server-side context (TLS 1.2 and later)."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(self.certfile, self.keyfile, self.password)
            if self.cafile is not None:
                context.load_verify_locations(cafile=self.cafile)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigurationError(f"TLS: cannot use {self._files()}: {exc}") from None
        context.verify_mode = _VERIFY[self.client_auth]
        return context

    def _files(self) -> str:
        files = [self.certfile, self.keyfile, self.cafile]
        return ", ".join(str(f) for f in files if f is not None)


# X.500 attribute names as Java's X500Principal writes them in RFC 2253 form.
_RFC2253_KEYWORDS = {
    "commonName": "CN",
    "organizationalUnitName": "OU",
    "organizationName": "O",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "countryName": "C",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


def certificate_principal(peercert: dict[str, Any] | None) -> str | None:
    """The principal of a client certificate as Kafka's default ``ssl.principal.mapping.rules``
    makes it: ``User:`` and the subject's distinguished name in RFC 2253 form, most specific
    first (``User:CN=alice,OU=eng,O=corp``); None without a certificate. Attributes without an
    RFC 2253 keyword keep Python's name (Java writes their OID)."""
    if not peercert or not peercert.get("subject"):
        return None
    rdns = []
    for rdn in reversed(peercert["subject"]):
        rdns.append("+".join(f"{_RFC2253_KEYWORDS.get(name, name)}={_escape(value)}" for name, value in rdn))
    return "User:" + ",".join(rdns)


def _escape(value: str) -> str:
    escaped = "".join("\\" + c if c in ',+"\\<>;' else c for c in value)
    if escaped.startswith(("#", " ")):
        escaped = "\\" + escaped
    if escaped.endswith(" ") and not escaped.endswith("\\ "):
        escaped = escaped[:-1] + "\\ "
    return escaped
