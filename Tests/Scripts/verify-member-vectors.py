#!/usr/bin/env python3
"""Independent check of the membership vectors in Sources/BatonHandoff/PROTOCOL.md
(section 13, "Membership").

Rebuilds every record of the vectors from the section's description with
Python's struct, hashlib (BLAKE2b) and the `cryptography` package (Ed25519),
without any baton or libsodium code: device keys from their seeds, device ids,
each record's encoding and signature (Ed25519 is deterministic), each record's
digest, the digest of the set, and which of two concurrent rekeys wins. Then
checks every signature against its signer's public key. Exits 1 on a mismatch.

Run: .venv/bin/python3 Tests/Scripts/verify-member-vectors.py
"""
import hashlib
import pathlib
import re
import struct
import sys

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

DOC = pathlib.Path(__file__).resolve().parents[2] / "Sources/BatonHandoff/PROTOCOL.md"
DOMAIN = b"baton-member-1"
FOUND, ADD, REMOVE, REKEY = 1, 2, 3, 4


def vectors():
    text = DOC.read_text()
    block = text.split("<!-- member-vectors -->")[1].split("```")[1]
    out = {}
    for line in block.splitlines():
        m = re.match(r"\s*([A-Za-z0-9_]+)\s*=\s*([0-9a-f ]+)$", line)
        if m:
            out[m.group(1)] = bytes.fromhex(m.group(2).replace(" ", ""))
    return out


class Device:
    def __init__(self, seed):
        self.secret = Ed25519PrivateKey.from_private_bytes(seed)
        self.public = self.secret.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        # u64 little-endian of the first 8 bytes of BLAKE2b-128("baton-device-id" || key)
        digest = hashlib.blake2b(b"baton-device-id" + self.public, digest_size=16).digest()
        self.id = int.from_bytes(digest[:8], "little")


def string(s):
    b = s.encode()
    assert len(b) <= 64
    return struct.pack("<H", len(b)) + b


def record(signer, kind, body):
    """u8 kind || body || Ed25519(signer, "baton-member-1" || u8 kind || body)"""
    signature = signer.secret.sign(DOMAIN + bytes([kind]) + body)
    return bytes([kind]) + body + signature


def rekey_body(epoch, signer, sealed):
    out = struct.pack("<IQH", epoch, signer.id, len(sealed))
    for device_id, blob in sorted(sealed.items()):
        out += struct.pack("<QI", device_id, len(blob)) + blob
    return out


def digest(b):
    return hashlib.blake2b(b, digest_size=32).digest()


def main():
    v = vectors()
    alice, bob, carol = Device(b"\x41" * 32), Device(b"\x42" * 32), Device(b"\x43" * 32)
    got = {}
    for name, d in (("alice", alice), ("bob", bob), ("carol", carol)):
        got[f"member_{name}_key"] = d.public
        got[f"member_{name}_id"] = struct.pack("<Q", d.id)

    found = record(alice, FOUND, alice.public + string("alice") + struct.pack("<Q", 1700000000))
    add_bob = record(alice, ADD, bob.public + string("bob")
                     + struct.pack("<QIQ", alice.id, 0, 1700000100))
    add_carol = record(bob, ADD, carol.public + string("carol")
                       + struct.pack("<QIQ", bob.id, 0, 1700000200))
    remove_carol = record(alice, REMOVE, struct.pack("<QQIQ", carol.id, alice.id, 0, 1700000300))
    # The sealed secrets are stand-ins of the right size (crypto_box_seal is
    # not deterministic): 0xe0.. for the lower device id, then 0xe1.., etc.
    low, high = sorted([alice.id, bob.id])
    rekey_alice = record(alice, REKEY, rekey_body(1, alice, {low: b"\xe0" * 80, high: b"\xe1" * 80}))
    rekey_bob = record(bob, REKEY, rekey_body(1, bob, {low: b"\xe2" * 80, high: b"\xe3" * 80}))
    records = {
        "member_found": found, "member_add_bob": add_bob, "member_add_carol": add_carol,
        "member_remove_carol": remove_carol, "member_rekey_alice": rekey_alice,
        "member_rekey_bob": rekey_bob,
    }
    got.update(records)
    # The set's digest: BLAKE2b-256 over the sorted record digests.
    digests = sorted(digest(r) for r in records.values())
    got["member_set_digest"] = digest(b"".join(digests))
    # Of two rekeys to the same epoch, the lower digest holds the epoch's secret.
    got["member_rekey_winner"] = min(digest(rekey_alice), digest(rekey_bob))

    bad = 0
    # Every signature verifies with its signer's key (and not with another's).
    signers = {"member_found": alice, "member_add_bob": alice, "member_add_carol": bob,
               "member_remove_carol": alice, "member_rekey_alice": alice, "member_rekey_bob": bob}
    for name, signer in signers.items():
        raw = v.get(name, records[name])
        message = DOMAIN + raw[:-64]
        try:
            signer.secret.public_key().verify(raw[-64:], message)
        except Exception:
            print(f"BAD SIGNATURE {name}"); bad += 1
        other = bob if signer is alice else alice
        try:
            other.secret.public_key().verify(raw[-64:], message)
            print(f"SIGNATURE OF {name} VERIFIES WITH ANOTHER KEY"); bad += 1
        except Exception:
            pass
    for name, value in got.items():
        if name not in v:
            print(f"MISSING {name} in PROTOCOL.md\n  got {value.hex()}"); bad += 1
        elif v[name] != value:
            print(f"MISMATCH {name}\n  doc {v[name].hex()}\n  got {value.hex()}"); bad += 1
        else:
            print(f"ok {name}")
    print("all vectors verified" if not bad else f"{bad} vector(s) wrong")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
