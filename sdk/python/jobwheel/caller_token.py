"""Verification of the caller tokens the dispatchers and the scheduler sign for executors.

A token (common/auth/caller_token.h) is

    jwc1.<base64url(payload)>.<base64url(Ed25519 signature over "jwc1." + payload part)>

with the payload exactly {"iss":"<issuer>","aud":"<audience>","iat":<unix s>,"exp":<unix s>}
(this field order, no spaces, no escapes). A verifier holds public keys by issuer and refuses
anything but a canonical token of a known issuer, signed by one of its keys, for its audience,
living at most 60 s, within a 10 s clock skew. Refusals never echo the token. Thread-safe.
"""

from __future__ import annotations

import base64
import re
import threading
import time
from dataclasses import dataclass
from typing import Callable

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

ISSUER_SCHEDULER = "scheduler"
ISSUER_DISPATCHER = "dispatcher"
PREFIX = "jwc1."
MAX_TOKEN_SIZE = 1024
MAX_CLAIM_SIZE = 256
MAX_LIFETIME_S = 60
DEFAULT_SKEW_S = 10
MAX_VERIFIED = 1024  # Verified tokens remembered (a few per dispatcher and audience are live).

_CLAIM = rb'([^"\\\x00-\x1f\x7f]{1,256})'
_SECONDS = rb"(0|[1-9][0-9]{0,11})"
_PAYLOAD = re.compile(
    rb'\{"iss":"'
    + _CLAIM
    + rb'","aud":"'
    + _CLAIM
    + rb'","iat":'
    + _SECONDS
    + rb',"exp":'
    + _SECONDS
    + rb"\}\Z"
)
_PEM_BLOCK = re.compile(rb"-----BEGIN PUBLIC KEY-----.+?-----END PUBLIC KEY-----", re.DOTALL)


class TokenError(Exception):
    """A refused token (UNAUTHENTICATED); the message never holds the token."""


@dataclass(frozen=True)
class CallerIdentity:
    issuer: str


def _b64url_decode_canonical(part: str) -> bytes | None:
    if not part or "=" in part:
        return None
    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (ValueError, TypeError):
        return None
    if _b64url(raw) != part:
        return None
    return raw


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def load_public_keys(pem: str | bytes, issuer: str) -> list[Ed25519PublicKey]:
    """Every Ed25519 public key in a PEM text; ValueError naming the issuer otherwise."""
    data = pem.encode() if isinstance(pem, str) else pem
    keys: list[Ed25519PublicKey] = []
    for block in _PEM_BLOCK.findall(data):
        try:
            key = serialization.load_pem_public_key(block)
        except ValueError as e:
            raise ValueError(f"public key of {issuer}: unreadable PEM ({e})") from None
        if not isinstance(key, Ed25519PublicKey):
            raise ValueError(f"public key of {issuer}: not an Ed25519 key")
        keys.append(key)
    if not keys:
        raise ValueError(f"public key of {issuer}: no PEM public key found")
    return keys


class CallerTokenVerifier:
    """Verifies caller tokens addressed to one audience (settable once it is known)."""

    def __init__(
        self,
        public_keys_pem: dict[str, str | bytes],
        audience: str = "",
        max_clock_skew_s: float = DEFAULT_SKEW_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._keys: dict[str, list[Ed25519PublicKey]] = {}
        for issuer, pem in public_keys_pem.items():
            if pem:
                self._keys[issuer] = load_public_keys(pem, issuer)
        if not self._keys:
            raise ValueError("caller token verifier: no issuer has a public key")
        if max_clock_skew_s < 0:
            raise ValueError("caller token verifier: negative clock skew")
        self._skew = max_clock_skew_s
        self._clock = clock
        self._mu = threading.Lock()
        self._audience = audience
        # Tokens whose form and signature verified → their claims (cleared when full).
        self._verified: dict[str, tuple[str, bytes, int, int]] = {}

    def set_audience(self, audience: str) -> None:
        with self._mu:
            self._audience = audience

    @property
    def audience(self) -> str:
        with self._mu:
            return self._audience

    def verify(self, token: str) -> CallerIdentity:
        """The token's issuer; TokenError for anything else. A token whose form and signature
        were verified before is not verified again (the signers reuse a token for half its
        life): its claims are remembered, and the audience and times checked on every call."""
        with self._mu:
            claims = self._verified.get(token)
            audience = self._audience
        if claims is None:
            claims = self._verify_signed(token)
            with self._mu:
                if len(self._verified) >= MAX_VERIFIED:
                    self._verified.clear()
                self._verified[token] = claims
        iss, aud, iat, exp = claims
        if not audience or aud != audience.encode("utf-8"):
            raise TokenError("caller token: wrong audience")
        if exp <= iat or exp - iat > MAX_LIFETIME_S:
            raise TokenError("caller token: bad lifetime")
        now = self._clock()
        if iat > now + self._skew:
            raise TokenError("caller token: not yet valid")
        if exp <= now - self._skew:
            raise TokenError("caller token: expired")
        return CallerIdentity(issuer=iss)

    def _verify_signed(self, token: str) -> tuple[str, bytes, int, int]:
        """(issuer, audience, iat, exp) of a canonical token signed by a key of its issuer."""
        if len(token) > MAX_TOKEN_SIZE:
            raise TokenError("caller token: too long")
        if not token.startswith(PREFIX):
            raise TokenError("caller token: not a caller token")
        rest = token[len(PREFIX) :]
        payload_part, dot, signature_part = rest.partition(".")
        if not dot:
            raise TokenError("caller token: malformed")
        payload = _b64url_decode_canonical(payload_part)
        signature = _b64url_decode_canonical(signature_part)
        if payload is None or signature is None or len(signature) != 64:
            raise TokenError("caller token: malformed")
        m = _PAYLOAD.match(payload)
        if m is None:
            raise TokenError("caller token: malformed payload")
        iss = m.group(1).decode("utf-8", "replace")
        aud = m.group(2)
        iat = int(m.group(3))
        exp = int(m.group(4))
        keys = self._keys.get(iss)
        if keys is None:
            raise TokenError("caller token: issuer not accepted here")
        signed = (PREFIX + payload_part).encode("ascii")
        if not any(_verifies(k, signature, signed) for k in keys):
            raise TokenError("caller token: bad signature")
        return iss, aud, iat, exp


def _verifies(key: Ed25519PublicKey, signature: bytes, data: bytes) -> bool:
    try:
        key.verify(signature, data)
        return True
    except InvalidSignature:
        return False


def sign_caller_token(
    private_pem: str | bytes,
    issuer: str,
    audience: str,
    issued_at: int | None = None,
    lifetime_s: int = 60,
) -> str:
    """A caller token (tests and tools: executors never hold a private key)."""
    data = private_pem.encode() if isinstance(private_pem, str) else private_pem
    key = serialization.load_pem_private_key(data, password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError("not an Ed25519 private key")
    iat = int(time.time()) if issued_at is None else issued_at
    payload = (
        f'{{"iss":"{issuer}","aud":"{audience}","iat":{iat},"exp":{iat + lifetime_s}}}'
    ).encode("utf-8")
    signed = PREFIX + _b64url(payload)
    return signed + "." + _b64url(key.sign(signed.encode("ascii")))


def generate_key_pair() -> tuple[bytes, bytes]:
    """A new Ed25519 key pair as (private PEM, public PEM) (tests)."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, public
