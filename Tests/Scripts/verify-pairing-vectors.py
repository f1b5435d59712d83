#!/usr/bin/env python3
"""Independent check of the pairing vectors in Sources/BatonHandoff/PROTOCOL.md (14.9).

Recomputes the whole fixed-randomness pairing exchange (P1 to P5, the ISK and
the keys derived from it) from the inputs the section states: ristretto255 and
CPace from verify-cpace-vectors.py (Python integers, hashlib's SHA-512),
HChaCha20 and XChaCha20-Poly1305 from verify-handoff-vectors.py (`cryptography`'s
ChaCha20-Poly1305), Ed25519 public keys from `cryptography`, BLAKE2b from
hashlib. No baton or libsodium code. Exits 1 on a mismatch.

Run: .venv/bin/python3 Tests/Scripts/verify-pairing-vectors.py
"""
import hashlib
import importlib.util
import pathlib
import re
import struct
import sys

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

HERE = pathlib.Path(__file__).resolve().parent
DOC = HERE.parents[1] / "Sources/BatonHandoff/PROTOCOL.md"


def load(name):
    spec = importlib.util.spec_from_file_location(name.replace("-", "_"), HERE / (name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cpace = load("verify-cpace-vectors")
handoff = load("verify-handoff-vectors")


def documented():
    text = DOC.read_text()
    block = text.split("<!-- pairing-vectors -->")[1].split("```")[1]
    out = {}
    for line in block.splitlines():
        m = re.match(r"\s*(pair_[A-Za-z0-9_]+)\s*=\s*(\S+)$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def b2b(data, key=b"", size=32):
    return hashlib.blake2b(data, digest_size=size, key=key).digest()


def public_key(seed):
    return Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes_raw()


def fingerprint(key):
    h = b2b(b"baton-fingerprint" + key)[:8].hex()
    return "-".join(h[i:i + 4] for i in range(0, 16, 4))


def string(s):
    b = s.encode()
    return struct.pack("<H", len(b)) + b


def main():
    doc = documented()
    got = {}
    # Inputs (14.9).
    member_key = public_key(bytes(range(32)))
    newcomer_key = public_key(bytes(range(0x20, 0x40)))
    prs = b"042913"
    slot = 7
    ci = b"baton-pair-1" + bytes([slot])
    sid = bytes(range(0x40, 0x50))
    cv = cpace.vectors()
    ya = int.from_bytes(cv["cpace_ya"], "little")
    yb = int.from_bytes(cv["cpace_yb"], "little")
    enrolment = bytes(i % 256 for i in range(300))
    message_size = 200

    got["pair_member_key"] = member_key.hex()
    got["pair_newcomer_key"] = newcomer_key.hex()
    got["pair_member_fingerprint"] = fingerprint(member_key)
    got["pair_newcomer_fingerprint"] = fingerprint(newcomer_key)
    got["pair_prs"] = prs.hex()
    got["pair_ci"] = ci.hex()
    got["pair_sid"] = sid.hex()
    ada = newcomer_key + string("carol")
    adb = member_key + string("alice")
    got["pair_ada"] = ada.hex()
    got["pair_adb"] = adb.hex()

    # CPace (section 12), the newcomer as initiator.
    g = cpace.encode(cpace.one_way_map(hashlib.sha512(
        cpace.generator_string(cpace.DSI, prs, ci, sid, cpace.S_IN_BYTES)).digest()))
    Ya = cpace.scalar_mult_vfy(ya, g)
    Yb = cpace.scalar_mult_vfy(yb, g)
    got["pair_Ya"] = Ya.hex()
    got["pair_Yb"] = Yb.hex()
    k_newcomer = cpace.scalar_mult_vfy(ya, Yb)
    k_member = cpace.scalar_mult_vfy(yb, Ya)
    transcript = cpace.lv_cat(Ya, ada) + cpace.lv_cat(Yb, adb)
    isk = hashlib.sha512(cpace.lv_cat(cpace.DSI + b"_ISK", sid, k_newcomer) + transcript).digest()
    isk_member = hashlib.sha512(cpace.lv_cat(cpace.DSI + b"_ISK", sid, k_member) + transcript).digest()
    got["pair_isk"] = isk.hex()
    keys = {label: b2b(("baton-pair-" + label).encode(), key=isk)
            for label in ("confirm-member", "confirm-newcomer", "enrol", "ack")}
    got["pair_k_confirm_m"] = keys["confirm-member"].hex()
    got["pair_k_confirm_n"] = keys["confirm-newcomer"].hex()
    got["pair_k_enrol"] = keys["enrol"].hex()
    got["pair_k_ack"] = keys["ack"].hex()

    # The messages (14.3).
    p1 = bytes([0x21, 1, slot]) + sid + Ya + ada
    p2_head = bytes([0x22, 1]) + Yb + adb
    p2 = p2_head + b2b(p1 + p2_head, key=keys["confirm-member"])
    p3 = bytes([0x23]) + b2b(p1 + p2, key=keys["confirm-newcomer"])
    room = message_size - 5 - 16
    pieces = [enrolment[i:i + room] for i in range(0, len(enrolment), room)]
    parts = []
    for index, piece in enumerate(pieces):
        head = bytes([0x24]) + struct.pack("<HH", index, len(pieces))
        parts.append(head + handoff.xchacha20poly1305_seal(
            keys["enrol"], head[1:] + bytes(20), piece, head))
    p5 = bytes([0x25]) + handoff.xchacha20poly1305_seal(
        keys["ack"], bytes(24), b2b(enrolment), bytes([0x25]))
    got["pair_p1"] = p1.hex()
    got["pair_p2"] = p2.hex()
    got["pair_p3"] = p3.hex()
    got["pair_p4_0"] = parts[0].hex()
    got["pair_p4_1"] = parts[1].hex()
    got["pair_p5"] = p5.hex()

    failures = 0
    if isk_member != isk:
        failures += 1
        print("MISMATCH the member's ISK differs from the newcomer's")
    else:
        print("ok both sides derive the same ISK")
    if len(parts) != 2 or [len(p) for p in pieces] != [179, 121]:
        failures += 1
        print("MISMATCH the enrolment is not two parts of 179 and 121 bytes")
    if any(len(p) > message_size for p in [p1, p2, p3, p5] + parts):
        failures += 1
        print("MISMATCH a message exceeds %d bytes" % message_size)
    # Nothing derived from the code alone travels: no message holds the
    # code, nor its SHA-512 or BLAKE2b prefix.
    for digest in (prs, hashlib.sha512(prs).digest()[:8], b2b(prs)[:8]):
        if any(digest in m for m in [p1, p2, p3, p5] + parts):
            failures += 1
            print("MISMATCH a message carries bytes derived from the code alone")
    for name in sorted(set(doc) | set(got)):
        if doc.get(name) == got.get(name):
            print("ok " + name)
        else:
            failures += 1
            print("MISMATCH %s: computed %s, documented %s"
                  % (name, got.get(name, "(nothing)"), doc.get(name, "(missing)")))
    if failures:
        print("%d pairing vector(s) failed" % failures)
        return 1
    print("all pairing vectors verified")
    return 0


if __name__ == "__main__":
    sys.exit(main())
