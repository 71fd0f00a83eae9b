from __future__ import annotations

import base64
import time

import pytest

from jobwheel.caller_token import (
    CallerTokenVerifier,
    TokenError,
    generate_key_pair,
    sign_caller_token,
)

AUD = "billing@10.0.0.7:7200"


@pytest.fixture(scope="module")
def keys() -> dict[str, tuple[bytes, bytes]]:
    return {"dispatcher": generate_key_pair(), "scheduler": generate_key_pair()}


def verifier(keys: dict[str, tuple[bytes, bytes]], now: float | None = None) -> CallerTokenVerifier:
    clock = (lambda: now) if now is not None else time.time
    return CallerTokenVerifier(
        {"dispatcher": keys["dispatcher"][1], "scheduler": keys["scheduler"][1]},
        audience=AUD,
        clock=clock,
    )


def refused(v: CallerTokenVerifier, token: str, why: str) -> None:
    with pytest.raises(TokenError) as e:
        v.verify(token)
    assert why in str(e.value)
    assert token not in str(e.value)


def test_valid_tokens_name_their_issuer(keys: dict[str, tuple[bytes, bytes]]) -> None:
    v = verifier(keys)
    assert (
        v.verify(sign_caller_token(keys["dispatcher"][0], "dispatcher", AUD)).issuer == "dispatcher"
    )
    assert v.verify(sign_caller_token(keys["scheduler"][0], "scheduler", AUD)).issuer == "scheduler"


def test_forged_and_malformed_tokens_are_refused(keys: dict[str, tuple[bytes, bytes]]) -> None:
    v = verifier(keys)
    other, _ = generate_key_pair()
    refused(v, sign_caller_token(other, "dispatcher", AUD), "bad signature")
    # A dispatcher key signing as the scheduler.
    refused(v, sign_caller_token(keys["dispatcher"][0], "scheduler", AUD), "bad signature")
    refused(v, sign_caller_token(keys["dispatcher"][0], "console", AUD), "issuer not accepted")
    good = sign_caller_token(keys["dispatcher"][0], "dispatcher", AUD)
    head, payload, sig = good.split(".")
    tampered = base64.urlsafe_b64decode(payload + "==").replace(b'"iat"', b'"iat"', 1)
    tampered = tampered.replace(AUD.encode(), b"billing@10.0.0.8:7200")
    forged_payload = base64.urlsafe_b64encode(tampered).decode().rstrip("=")
    refused(v, f"{head}.{forged_payload}.{sig}", "bad signature")
    refused(v, good + "A", "malformed")
    refused(v, good.replace("jwc1.", "jwc2."), "not a caller token")
    refused(v, "jwc1.abc", "malformed")
    refused(v, "jwc1." + "A" * 2000, "too long")
    refused(v, f"{head}.{payload}=.{sig}", "malformed")
    spaced = (
        base64.urlsafe_b64encode(base64.urlsafe_b64decode(payload + "==").replace(b",", b", ", 1))
        .decode()
        .rstrip("=")
    )
    refused(v, f"{head}.{spaced}.{sig}", "")


def test_wrong_audience_lifetime_and_time(keys: dict[str, tuple[bytes, bytes]]) -> None:
    now = 1_800_000_000
    v = verifier(keys, now=now)
    k = keys["dispatcher"][0]
    # The bare address (the audience before app binding) is another audience.
    refused(v, sign_caller_token(k, "dispatcher", "10.0.0.7:7200", issued_at=now), "wrong audience")
    refused(
        v,
        sign_caller_token(k, "dispatcher", "other@10.0.0.7:7200", issued_at=now),
        "wrong audience",
    )
    refused(
        v, sign_caller_token(k, "dispatcher", AUD, issued_at=now, lifetime_s=61), "bad lifetime"
    )
    refused(v, sign_caller_token(k, "dispatcher", AUD, issued_at=now + 11), "not yet valid")
    refused(v, sign_caller_token(k, "dispatcher", AUD, issued_at=now - 71), "expired")
    # Within the 10 s skew.
    assert (
        v.verify(sign_caller_token(k, "dispatcher", AUD, issued_at=now + 9)).issuer == "dispatcher"
    )
    assert (
        v.verify(sign_caller_token(k, "dispatcher", AUD, issued_at=now - 69)).issuer == "dispatcher"
    )


def test_no_audience_refuses_everything_and_keys_rotate(
    keys: dict[str, tuple[bytes, bytes]]
) -> None:
    new_priv, new_pub = generate_key_pair()
    v = CallerTokenVerifier({"dispatcher": keys["dispatcher"][1] + new_pub})
    token = sign_caller_token(new_priv, "dispatcher", AUD)
    refused(v, token, "wrong audience")
    v.set_audience(AUD)
    assert v.verify(token).issuer == "dispatcher"
    assert (
        v.verify(sign_caller_token(keys["dispatcher"][0], "dispatcher", AUD)).issuer == "dispatcher"
    )


def test_bad_key_files_are_refused() -> None:
    with pytest.raises(ValueError, match="no issuer has a public key"):
        CallerTokenVerifier({})
    with pytest.raises(ValueError, match="no PEM public key"):
        CallerTokenVerifier({"dispatcher": "not a key"})


def test_a_token_verified_before_is_still_checked_for_audience_and_time(
    keys: dict[str, tuple[bytes, bytes]],
) -> None:
    now = [1_800_000_000.0]
    v = CallerTokenVerifier(
        {"dispatcher": keys["dispatcher"][1]}, audience=AUD, clock=lambda: now[0]
    )
    token = sign_caller_token(keys["dispatcher"][0], "dispatcher", AUD, issued_at=int(now[0]))
    assert v.verify(token).issuer == "dispatcher"
    assert v.verify(token).issuer == "dispatcher"  # Remembered: the same answer.
    now[0] += 70  # exp + 10 s of skew.
    refused(v, token, "expired")
    now[0] -= 70
    v.set_audience("billing@10.0.0.8:7200")
    refused(v, token, "wrong audience")
    v.set_audience(AUD)
    assert v.verify(token).issuer == "dispatcher"
    # A forged token is never remembered as verified, however often it comes.
    head, payload, sig = token.split(".")
    forged = f"{head}.{payload}.{sig[:-2]}{'AA' if sig[-2:] != 'AA' else 'BA'}"
    for _ in range(2):
        with pytest.raises(TokenError):
            v.verify(forged)
