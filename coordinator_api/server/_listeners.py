"""The addresses the embedded coordinator listens on, each with its security protocol, as Kafka's
``listeners``, ``advertised.listeners`` and ``listener.security.protocol.map`` describe them."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from coordinator_api._errors import ConfigurationError
from coordinator_api.server._sasl import SaslSettings
from coordinator_api.server._tls import TlsSettings

SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SECURITY_PROTOCOLS: tuple[SecurityProtocol, ...] = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

_NAME = re.compile(r"[A-Za-z0-9_]+")
_ENTRY = re.compile(r"(?P<name>[^:/]*)://(?P<host>\[[^\]]*\]|[^:]*):(?P<port>[0-9]+)")


@dataclass(frozen=True, kw_only=True)
class Listener:
    """One address the coordinator listens on, and how clients there must connect.

    :param name: the listener's name (Kafka's listener name, e.g. ``PLAINTEXT``, ``INTERNAL``);
        names are unique among a server's listeners.
    :param host: the address to listen on; 127.0.0.1 by default.
    :param port: the port; 0 picks a free one.
    :param tls: speak TLS with these certificates (``SSL``, or ``SASL_SSL`` with ``sasl``).
    :param sasl: clients authenticate first (``SASL_PLAINTEXT``, or ``SASL_SSL`` with ``tls``).
    :param advertised_host: the host that Metadata and FindCoordinator answers on this listener
        name (Kafka's ``advertised.listeners``); defaults to ``host``, or 127.0.0.1 when
        listening on all addresses.
    :param advertised_port: the port those answers name; defaults to the port listened on. Give
        another when clients reach the listener through something that forwards another port to
        it (a proxy, a NAT, a container's published port), as ``advertised.listeners`` can.
    :param allow_anonymous: accept clients that do not authenticate (neither SASL nor a
        required client certificate) on an address other than loopback. Off by default: such
        a listener refuses to start, unless the authorizer is on and closed to principals no
        ACL names (then ``User:ANONYMOUS`` gets only what ACLs grant it). When on, the server
        logs a warning saying what anyone who reaches the port can do.
    :raises ConfigurationError: a bad name, port or setting.
    """

    name: str = "PLAINTEXT"
    host: str = "127.0.0.1"
    port: int = 0
    tls: TlsSettings | None = None
    sasl: SaslSettings | None = None
    advertised_host: str | None = None
    advertised_port: int | None = None
    allow_anonymous: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ConfigurationError(
                f"a listener's name is letters, digits and '_' only (PLAINTEXT, INTERNAL), got {self.name!r}"
            )
        if not isinstance(self.port, int) or isinstance(self.port, bool) or not 0 <= self.port <= 65535:
            raise ConfigurationError(f"listener {self.name}: port must be 0..65535, got {self.port!r}")
        if self.advertised_port is not None and (
            not isinstance(self.advertised_port, int)
            or isinstance(self.advertised_port, bool)
            or not 1 <= self.advertised_port <= 65535
        ):
            raise ConfigurationError(
                f"listener {self.name}: advertised_port must be 1..65535 (or None: the port listened "
                f"on), got {self.advertised_port!r}"
            )
        if not isinstance(self.host, str):
            raise ConfigurationError(f"listener {self.name}: host must be a string, got {self.host!r}")
        if self.tls is not None and not isinstance(self.tls, TlsSettings):
            raise ConfigurationError(f"listener {self.name}: tls must be TlsSettings, got {self.tls!r}")
        if self.sasl is not None and not isinstance(self.sasl, SaslSettings):
            raise ConfigurationError(f"listener {self.name}: sasl must be SaslSettings, got {self.sasl!r}")
        if not isinstance(self.allow_anonymous, bool):
            raise ConfigurationError(
                f"listener {self.name}: allow_anonymous must be true or false, got {self.allow_anonymous!r}"
            )

    @property
    def security_protocol(self) -> SecurityProtocol:
        if self.sasl is not None:
            return "SASL_SSL" if self.tls is not None else "SASL_PLAINTEXT"
        return "SSL" if self.tls is not None else "PLAINTEXT"

    @property
    def client_host(self) -> str:
        """The host clients are told to connect to on this listener."""
        if self.advertised_host:
            return self.advertised_host
        return "127.0.0.1" if self.host in ("", "0.0.0.0", "::") else self.host

    @property
    def authenticates(self) -> bool:
        """Whether every client here proves who it is (SASL, or a required client certificate)."""
        return self.sasl is not None or (self.tls is not None and self.tls.client_auth == "required")

    @property
    def anonymous_beyond_loopback(self) -> bool:
        """Whether clients beyond this machine may connect without proving who they are."""
        return not is_loopback(self.host) and not self.authenticates


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name, or "" (every address)
        return False


def parse_listeners(
    spec: str,
    *,
    protocol_map: str | None = None,
    advertised: str | None = None,
    tls: TlsSettings | None = None,
    sasl: SaslSettings | None = None,
    allow_anonymous: bool = False,
) -> list[Listener]:
    """Listeners from Kafka's notation: ``listeners`` (``NAME://HOST:PORT,...``), with
    ``listener.security.protocol.map`` (``NAME:PROTOCOL,...``) for names that are not a
    security protocol themselves, and ``advertised.listeners`` (``NAME://HOST:PORT``: what
    Metadata and FindCoordinator answer on that listener; a port of 0 there means the port
    listened on).

    ``tls`` and ``sasl`` go to every listener whose protocol needs them (Kafka's broker-wide
    ``ssl.*`` and ``sasl.*`` settings).

    :raises ConfigurationError: a malformed entry, a repeated name or port, a protocol without
        its settings, or settings no listener uses.
    """
    protocols: dict[str, SecurityProtocol] = {p: p for p in SECURITY_PROTOCOLS}
    if protocol_map:
        for entry in _items(protocol_map):
            name, sep, mapped = entry.partition(":")
            if not sep or mapped.upper() not in SECURITY_PROTOCOLS or not _NAME.fullmatch(name):
                raise ConfigurationError(
                    f"listener security protocol map: expected NAME:PROTOCOL with PROTOCOL one of "
                    f"{', '.join(SECURITY_PROTOCOLS)}, got {entry!r}"
                )
            protocols[name.upper()] = SECURITY_PROTOCOLS[SECURITY_PROTOCOLS.index(mapped.upper())]
    entries = [_parse_entry(e, what="listeners") for e in _items(spec)]
    if not entries:
        raise ConfigurationError("listeners: expected NAME://HOST:PORT[,NAME://HOST:PORT...], got nothing")
    advertised_at = _advertised(advertised, entries)
    listeners = []
    for name, host, port in entries:
        found = protocols.get(name)
        if found is None:
            raise ConfigurationError(
                f"listener {name} has no security protocol: name it after one "
                f"({', '.join(SECURITY_PROTOCOLS)}) or map it "
                f"(--listener-security-protocol-map {name}:SASL_SSL)"
            )
        protocol: str = found
        wants_tls, wants_sasl = protocol.endswith("SSL"), protocol.startswith("SASL")
        if wants_tls and tls is None:
            raise ConfigurationError(f"listener {name} ({protocol}) needs TLS certificates (--ssl-certfile)")
        if wants_sasl and sasl is None:
            raise ConfigurationError(f"listener {name} ({protocol}) needs SASL users (--sasl-users-file)")
        listeners.append(
            Listener(
                name=name,
                host=host,
                port=port,
                tls=tls if wants_tls else None,
                sasl=sasl if wants_sasl else None,
                advertised_host=advertised_at[name][0] if name in advertised_at else None,
                advertised_port=advertised_at[name][1] if name in advertised_at else None,
                allow_anonymous=allow_anonymous,
            )
        )
    if tls is not None and not any(lis.tls is not None for lis in listeners):
        raise ConfigurationError("TLS certificates are given, but no listener is SSL or SASL_SSL")
    if sasl is not None and not any(lis.sasl is not None for lis in listeners):
        raise ConfigurationError("SASL users are given, but no listener is SASL_PLAINTEXT or SASL_SSL")
    check_listeners(listeners)
    return listeners


def check_listeners(listeners: Sequence[Listener]) -> None:
    """Names unique, fixed ports distinct.

    :raises ConfigurationError: otherwise.
    """
    if not listeners:
        raise ConfigurationError("a coordinator needs at least one listener")
    seen: dict[str, Listener] = {}
    ports: dict[tuple[str, int], str] = {}
    for listener in listeners:
        if listener.name in seen:
            raise ConfigurationError(f"listener name {listener.name} is used twice")
        seen[listener.name] = listener
        if listener.port:
            other = ports.get((listener.host, listener.port))
            if other is not None:
                raise ConfigurationError(
                    f"listeners {other} and {listener.name} both listen on {listener.host}:{listener.port}"
                )
            ports[(listener.host, listener.port)] = listener.name


def _items(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _parse_entry(entry: str, *, what: str) -> tuple[str, str, int]:
    match = _ENTRY.fullmatch(entry)
    if match is None or not _NAME.fullmatch(match["name"]):
        raise ConfigurationError(
            f"{what}: expected NAME://HOST:PORT (e.g. PLAINTEXT://127.0.0.1:9092), got {entry!r}"
        )
    port = int(match["port"])
    if port > 65535:
        raise ConfigurationError(f"{what}: port must be 0..65535, got {entry!r}")
    return match["name"].upper(), match["host"].strip("[]"), port


def _advertised(
    spec: str | None, entries: Sequence[tuple[str, str, int]]
) -> Mapping[str, tuple[str, int | None]]:
    """Listener name -> the host and port (None: the one listened on) it advertises."""
    if not spec:
        return {}
    names = {name for name, _, _ in entries}
    found: dict[str, tuple[str, int | None]] = {}
    for entry in _items(spec):
        name, host, port = _parse_entry(entry, what="advertised listeners")
        if name not in names:
            raise ConfigurationError(f"advertised listeners: {name} is not one of the listeners")
        if not host:
            raise ConfigurationError(f"advertised listeners: {name} needs a host, got {entry!r}")
        found[name] = (host, port or None)
    return found
