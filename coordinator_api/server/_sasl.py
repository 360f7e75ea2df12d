"""SASL authentication for the embedded coordinator: PLAIN and SCRAM-SHA-256/512 (RFC 5802 and
RFC 7677), as Kafka's brokers offer them (SaslHandshake v1, then SaslAuthenticate), sans-IO.

Users are kept as SCRAM credentials only (salt, iteration count, StoredKey, ServerKey per
mechanism): never a password, so a stolen users file does not give anyone a password. PLAIN
checks the password it is given against the same credentials (the salted password is derived
again and its StoredKey compared). Passwords and proofs are never logged.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from coordinator_api._errors import ConfigurationError

PLAIN: Final = "PLAIN"
SCRAM_MECHANISMS: Final = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISMS: Final = (PLAIN, *SCRAM_MECHANISMS)
#: Kafka's default SCRAM iteration count (and its minimum).
ITERATIONS: Final = 4096


class AuthenticationFailed(Exception):
    """The client's credentials are wrong, or its messages are not the mechanism's: the
    connection gets SASL_AUTHENTICATION_FAILED and is closed. The text never holds a secret."""


@dataclass(frozen=True)
class ScramCredential:
    """One user's SCRAM credential for one mechanism (what Kafka stores in ZooKeeper/KRaft)."""

    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    @classmethod
    def make(cls, password: str, mechanism: str, iterations: int = ITERATIONS) -> ScramCredential:
        digest = SCRAM_MECHANISMS[mechanism]
        salt = secrets.token_bytes(32)
        salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations)
        client_key = hmac.digest(salted, b"Client Key", digest)
        return cls(
            salt,
            iterations,
            hashlib.new(digest, client_key).digest(),
            hmac.digest(salted, b"Server Key", digest),
        )

    def accepts(self, password: str, mechanism: str) -> bool:
        """Whether ``password`` is the one this credential was made from."""
        digest = SCRAM_MECHANISMS[mechanism]
        salted = hashlib.pbkdf2_hmac(digest, password.encode(), self.salt, self.iterations)
        client_key = hmac.digest(salted, b"Client Key", digest)
        return hmac.compare_digest(hashlib.new(digest, client_key).digest(), self.stored_key)


Users = Mapping[str, Mapping[str, ScramCredential]]
"""User name -> mechanism -> credential."""


def load_users(path: str | Path) -> dict[str, dict[str, ScramCredential]]:
    """Read a users file (``coordinator-api users``): JSON, credentials only.

    :raises ConfigurationError: the file cannot be read or is not a users file.
    """
    try:
        doc = json.loads(Path(path).read_text())
        return {
            str(user): {
                mechanism: ScramCredential(
                    base64.b64decode(c["salt"]),
                    int(c["iterations"]),
                    base64.b64decode(c["stored_key"]),
                    base64.b64decode(c["server_key"]),
                )
                for mechanism, c in credentials.items()
                if mechanism in SCRAM_MECHANISMS
            }
            for user, credentials in doc["users"].items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigurationError(f"users file {path}: cannot read it: {exc!r}") from None


def save_users(path: str | Path, users: Users) -> None:
    """Write a users file, readable by its owner only, replaced whole (never half written)."""
    doc = {
        "users": {
            user: {
                mechanism: {
                    "salt": base64.b64encode(c.salt).decode(),
                    "iterations": c.iterations,
                    "stored_key": base64.b64encode(c.stored_key).decode(),
                    "server_key": base64.b64encode(c.server_key).decode(),
                }
                for mechanism, c in sorted(credentials.items())
            }
            for user, credentials in sorted(users.items())
        }
    }
    target = Path(path)
    partial = target.with_name(target.name + ".partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        json.dump(doc, out, indent=2)
        out.flush()
        os.fsync(out.fileno())
    os.replace(partial, target)


@dataclass(frozen=True, kw_only=True)
class SaslSettings:
    """SASL on the listener (Kafka's ``SASL_PLAINTEXT``, or ``SASL_SSL`` with TLS): every
    connection must authenticate before any other request but ApiVersions.

    :param users_file: the users and their SCRAM credentials (``coordinator-api users add``).
    :param mechanisms: ``sasl.enabled.mechanisms``: any of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512.
    :raises ConfigurationError: an unknown mechanism, or a users file that cannot be read.
    """

    users_file: str | Path
    mechanisms: tuple[str, ...] = ("SCRAM-SHA-256", "SCRAM-SHA-512")

    def __post_init__(self) -> None:
        unknown = [m for m in self.mechanisms if m not in MECHANISMS]
        if unknown or not self.mechanisms:
            raise ConfigurationError(
                f"SASL mechanisms must be some of {', '.join(MECHANISMS)}, got {', '.join(self.mechanisms)}"
            )
        load_users(self.users_file)

    def users(self) -> dict[str, dict[str, ScramCredential]]:
        """The users file as it is now (read again at each new authentication)."""
        return load_users(self.users_file)


class SaslExchange:
    """One connection's authentication: the mechanism its handshake chose, then its tokens.

    :meth:`respond` takes each SaslAuthenticate token and returns the server's, raising
    :class:`AuthenticationFailed`; :attr:`principal` is ``User:<name>`` once it succeeded.
    """

    def __init__(self, mechanism: str, users: Users) -> None:
        self.mechanism = mechanism
        self._users = users
        self.principal: str | None = None
        self._scram: tuple[str, str, ScramCredential, str] | None = None  # user, nonce, credential, first

    def respond(self, token: bytes) -> bytes:
        if self.principal is not None:
            raise AuthenticationFailed("already authenticated")
        if self.mechanism == PLAIN:
            return self._plain(token)
        if self._scram is None:
            return self._scram_first(token)
        return self._scram_final(token)

    def _failed(self) -> AuthenticationFailed:
        return AuthenticationFailed(
            f"Authentication failed during authentication due to invalid credentials with SASL "
            f"mechanism {self.mechanism}"
        )

    def _plain(self, token: bytes) -> bytes:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens")
        authzid, user, password = (p.decode(errors="replace") for p in parts)
        if authzid and authzid != user:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id different from username"
            )
        credentials = self._users.get(user, {})
        # Any SCRAM credential of the user checks the password (none is kept in plain).
        if not any(c.accepts(password, m) for m, c in credentials.items()):
            # Kafka's PlainSaslServer says this (its SCRAM server, :meth:`_failed`).
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        self.principal = f"User:{user}"
        return b""

    def _scram_first(self, token: bytes) -> bytes:
        text = token.decode(errors="replace")
        header, _, bare = text.partition(",")
        _authzid, _, bare = bare.partition(",")
        if header not in ("n", "y") or not bare:
            raise AuthenticationFailed("Invalid SCRAM client first message")
        fields = dict(item.split("=", 1) for item in bare.split(",") if "=" in item)
        user = fields.get("n", "").replace("=2C", ",").replace("=3D", "=")
        nonce = fields.get("r", "")
        credential = self._users.get(user, {}).get(self.mechanism)
        if not user or not nonce:
            raise AuthenticationFailed("Invalid SCRAM client first message")
        if credential is None:
            # As for a wrong password: whether the user exists is not told.
            credential = ScramCredential(secrets.token_bytes(32), ITERATIONS, b"", b"")
        server_nonce = nonce + base64.b64encode(secrets.token_bytes(18)).decode()
        first = f"r={server_nonce},s={base64.b64encode(credential.salt).decode()},i={credential.iterations}"
        self._scram = (user, server_nonce, credential, f"{bare},{first}")
        return first.encode()

    def _scram_final(self, token: bytes) -> bytes:
        assert self._scram is not None
        user, nonce, credential, messages = self._scram
        text = token.decode(errors="replace")
        without_proof, _, proof = text.rpartition(",p=")
        fields = dict(item.split("=", 1) for item in without_proof.split(",") if "=" in item)
        if fields.get("r") != nonce or not proof:
            raise AuthenticationFailed("Invalid SCRAM client final message")
        digest = SCRAM_MECHANISMS[self.mechanism]
        auth_message = f"{messages},{without_proof}".encode()
        try:
            client_proof = base64.b64decode(proof, validate=True)
        except ValueError:
            raise AuthenticationFailed("Invalid SCRAM client final message") from None
        signature = hmac.digest(credential.stored_key or b"\x00", auth_message, digest)
        if len(client_proof) != len(signature) or not credential.stored_key:
            raise self._failed()
        client_key = bytes(a ^ b for a, b in zip(client_proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(digest, client_key).digest(), credential.stored_key):
            raise self._failed()
        self.principal = f"User:{user}"
        server_signature = hmac.digest(credential.server_key, auth_message, digest)
        return b"v=" + base64.b64encode(server_signature)


def add_user(
    users: dict[str, dict[str, ScramCredential]], user: str, password: str, mechanisms: Iterable[str]
) -> None:
    """Give ``user`` a credential for each SCRAM mechanism, made from ``password``.

    :raises ConfigurationError: an empty user name or password, or not a SCRAM mechanism.
    """
    if not user or not password:
        raise ConfigurationError("a user needs a name and a password")
    chosen = list(mechanisms)
    unknown = [m for m in chosen if m not in SCRAM_MECHANISMS]
    if unknown or not chosen:
        raise ConfigurationError(f"credentials are made for SCRAM-SHA-256 and SCRAM-SHA-512, got {chosen}")
    users[user] = {m: ScramCredential.make(password, m) for m in chosen}


def described(users: Users) -> list[dict[str, Any]]:
    """The users and their mechanisms, without any secret (``coordinator-api users list``)."""
    return [{"user": user, "mechanisms": sorted(credentials)} for user, credentials in sorted(users.items())]
