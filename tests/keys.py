"""Test keys, generated per run: no key is ever committed."""

from __future__ import annotations

from functools import cache

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from standin.keys import new_private_key_pem, public_key_of


@cache
def rsa_pem() -> str:
    return new_private_key_pem()


def public_pem(private_pem: str) -> str:
    return public_key_of(private_pem)


def ec_pem() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
