#!/usr/bin/env python3
"""Independent check of the test vectors in Sources/BatonHandoff/PROTOCOL.md.

Recomputes every vector from the specification with Python's hashlib (BLAKE2b)
and the `cryptography` package (ChaCha20, ChaCha20-Poly1305, X25519), plus HChaCha20
written out here, without any baton or libsodium code. Exits 1 on a mismatch.

Run: .venv/bin/python3 Tests/Scripts/verify-handoff-vectors.py
"""
import hashlib
import pathlib
import re
import struct
import sys

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives import serialization

DOC = pathlib.Path(__file__).resolve().parents[2] / "Sources/BatonHandoff/PROTOCOL.md"


def vectors():
    text = DOC.read_text()
    block = text.split("<!-- vectors -->")[1].split("```")[1]
    out = {}
    for line in block.splitlines():
        m = re.match(r"\s*([A-Za-z0-9_]+)\s*=\s*([0-9a-f ]+)$", line)
        if m:
            out[m.group(1)] = bytes.fromhex(m.group(2).replace(" ", ""))
    return out


def kdf(key, subkey_id, context):
    # crypto_kdf_derive_from_key: BLAKE2b-256, key=master, salt=id LE || 0^8, person=ctx || 0^8
    return hashlib.blake2b(
        b"", digest_size=32, key=key,
        salt=struct.pack("<Q", subkey_id) + bytes(8),
        person=context.encode() + bytes(8)).digest()


def rotl(v, c):
    return ((v << c) & 0xFFFFFFFF) | (v >> (32 - c))


def hchacha20(key, nonce16):
    s = list(struct.unpack("<4I", b"expand 32-byte k")) + list(struct.unpack("<8I", key)) + list(
        struct.unpack("<4I", nonce16))

    def qr(a, b, c, d):
        s[a] = (s[a] + s[b]) & 0xFFFFFFFF; s[d] = rotl(s[d] ^ s[a], 16)
        s[c] = (s[c] + s[d]) & 0xFFFFFFFF; s[b] = rotl(s[b] ^ s[c], 12)
        s[a] = (s[a] + s[b]) & 0xFFFFFFFF; s[d] = rotl(s[d] ^ s[a], 8)
        s[c] = (s[c] + s[d]) & 0xFFFFFFFF; s[b] = rotl(s[b] ^ s[c], 7)

    for _ in range(10):
        qr(0, 4, 8, 12); qr(1, 5, 9, 13); qr(2, 6, 10, 14); qr(3, 7, 11, 15)
        qr(0, 5, 10, 15); qr(1, 6, 11, 12); qr(2, 7, 8, 13); qr(3, 4, 9, 14)
    return struct.pack("<8I", *(s[0:4] + s[12:16]))


def xchacha20_xor(key, nonce24, data):
    # crypto_stream_xchacha20: HChaCha20 subkey, then original ChaCha20 with a
    # 64-bit counter (0) and the last 8 nonce bytes.
    sub = hchacha20(key, nonce24[:16])
    enc = Cipher(algorithms.ChaCha20(sub, bytes(8) + nonce24[16:]), mode=None).encryptor()
    return enc.update(data)


def xchacha20poly1305_seal(key, nonce24, plaintext, ad):
    sub = hchacha20(key, nonce24[:16])
    return ChaCha20Poly1305(sub).encrypt(bytes(4) + nonce24[16:], plaintext, ad)


def string(s):
    b = s.encode()
    return struct.pack("<H", len(b)) + b


def vv(pairs):
    out = struct.pack("<H", len(pairs))
    for device, counter in sorted(pairs):
        out += struct.pack("<QQ", device, counter)
    return out


def main():
    v = vectors()
    got = {}
    group = bytes(range(32))
    got["group_key"] = group
    got["k_beacon_enc"] = kdf(group, 1, "baton-bc")
    got["k_beacon_mac"] = kdf(group, 2, "baton-bc")
    got["k_auth"] = kdf(group, 1, "baton-au")
    got["k_payload"] = kdf(group, 1, "baton-pl")
    got["k_summary"] = kdf(group, 1, "baton-fp")

    # Beacon
    plain = bytes([1]) + (0x123456).to_bytes(3, "little") + (0x89ABCDEF).to_bytes(4, "little")
    got["beacon_plaintext"] = plain
    nonce = bytes(range(0xA0, 0xA8))
    header = bytes.fromhex("0201061bffffff")
    ct = xchacha20_xor(got["k_beacon_enc"], nonce + bytes(16), plain)
    tag = hashlib.blake2b(header + nonce + ct, digest_size=16, key=got["k_beacon_mac"]).digest()[:8]
    got["beacon_nonce"] = nonce
    got["beacon"] = header + nonce + ct + tag

    # Device keys (section 2): Ed25519 from the seeds a1*32 and b0*32; the
    # device id is the first 8 bytes (little-endian) of BLAKE2b-128 over
    # "baton-device-id" || public key.
    raw = serialization.Encoding.Raw, serialization.PublicFormat.Raw
    dev_a = Ed25519PrivateKey.from_private_bytes(b"\xa1" * 32)
    dev_b = Ed25519PrivateKey.from_private_bytes(b"\xb0" * 32)
    pk_a, pk_b = dev_a.public_key().public_bytes(*raw), dev_b.public_key().public_bytes(*raw)
    device_id = lambda pk: struct.unpack("<Q", hashlib.blake2b(b"baton-device-id" + pk, digest_size=16).digest()[:8])[0]
    alice, bob = device_id(pk_a), device_id(pk_b)
    got["device_key_alice"], got["device_key_bob"] = pk_a, pk_b
    got["device_id_alice"], got["device_id_bob"] = struct.pack("<Q", alice), struct.pack("<Q", bob)

    # Handshake (section 4): identity = key || string name || signature over
    # label || transcript || header || key || name, sealed under identity keys
    # made from k_auth and the X25519 secret of the two ephemeral keys.
    ident = lambda pk, n: pk + string(n)
    sk_i = X25519PrivateKey.from_private_bytes(b"\x55" * 32)
    sk_r = X25519PrivateKey.from_private_bytes(b"\x66" * 32)
    e_i, e_r = sk_i.public_key().public_bytes(*raw), sk_r.public_key().public_bytes(*raw)
    shared = sk_i.exchange(X25519PublicKey.from_public_bytes(e_r))
    assert shared == sk_r.exchange(X25519PublicKey.from_public_bytes(e_i))
    got["hs_ephemeral_i"], got["hs_ephemeral_r"], got["hs_shared"] = e_i, e_r, shared
    m1 = bytes([1, 11]) + e_i
    head2 = bytes([2, 11]) + e_r + b"\x33" * 24
    hk = hashlib.blake2b(b"baton-identity-1" + m1 + head2 + shared, digest_size=64,
                         key=got["k_auth"]).digest()
    got["k_identity_r"], got["k_identity_i"] = hk[:32], hk[32:]
    id_r = ident(pk_b, "bob")
    id_r += dev_b.sign(b"baton-device-R" + m1 + head2 + id_r)
    m2 = head2 + xchacha20poly1305_seal(hk[:32], b"\x33" * 24, id_r, b"baton-auth-R" + m1 + head2)
    head3 = bytes([3]) + b"\x44" * 24
    id_i = ident(pk_a, "alice")
    id_i += dev_a.sign(b"baton-device-I" + m1 + m2 + head3 + id_i)
    m3 = head3 + xchacha20poly1305_seal(hk[32:], b"\x44" * 24, id_i, b"baton-auth-I" + m1 + m2 + head3)
    okm = hashlib.blake2b(b"baton-session-4" + m1 + m2 + m3 + struct.pack("<QQ", alice, bob) + shared,
                          digest_size=64, key=got["k_payload"]).digest()
    got["hs_m1"], got["hs_m2"], got["hs_m3"] = m1, m2, m3
    got["k_initiator_to_responder"], got["k_responder_to_initiator"] = okm[:32], okm[32:]

    # Vouchers (section 7.5): a device's Ed25519 signature over
    # "baton-vouch-1" || string type || string path || u64 device || u64 counter;
    # on the wire u16 k || k x (u64 device || signature), devices ascending
    signers = {alice: dev_a, bob: dev_b}
    def voucher_message(typ, path, device, counter):
        return b"baton-vouch-1" + string(typ) + string(path) + struct.pack("<QQ", device, counter)
    def vouchers(typ, path, pairs):
        out = struct.pack("<H", len(pairs))
        for device, counter in sorted(pairs):
            out += struct.pack("<Q", device) + signers[device].sign(voucher_message(typ, path, device, counter))
        return out

    # A NOTE message in frame 5 from the initiator
    content = b"# Hi\n"
    chash = hashlib.blake2b(content, digest_size=32).digest()
    version = vv([(alice, 2), (bob, 1)])
    vouched = vouchers("org.example.notes", "a.md", [(alice, 2), (bob, 1)])
    got["voucher_message_alice"] = voucher_message("org.example.notes", "a.md", alice, 2)
    got["voucher_alice"] = dev_a.sign(got["voucher_message_alice"])
    got["voucher_bob"] = dev_b.sign(voucher_message("org.example.notes", "a.md", bob, 1))
    body = (string("org.example.notes") + string("Hi") + string("a.md") + version + vouched
            + struct.pack("<Q", alice) + string("alice") + chash + struct.pack("<I", len(content)) + content)
    frame_plain = bytes([6, 0]) + body
    # Data frame: 0x11, u64 number, u64 ack, u32 frames sent, u32 credits granted,
    # u8 flags (all 0 here); nonce: number, 0x00, 0^15 (section 5)
    fheader = bytes([0x11]) + struct.pack("<QQIIB", 5, 0, 0, 0, 0)
    frame = fheader + xchacha20poly1305_seal(okm[:32], fheader[1:9] + bytes(16), frame_plain, fheader)
    got["content_hash"] = chash
    got["version_vector"] = version
    got["frame_plaintext"] = frame_plain
    got["frame"] = frame

    # Links (section 6.2): LINK (max note size 1 MiB, and the root of an
    # index holding only the NOTE's entry, answered with that entry) as the
    # initiator's frame 0, PING as the responder's frame 0, PONG as the
    # initiator's frame 1
    def seal_frame(key, counter, plain):
        h = bytes([0x11]) + struct.pack("<QQIIB", counter, 0, 0, 0, 0)
        return h + xchacha20poly1305_seal(key, h[1:9] + bytes(16), plain, h)
    # The NOTE's index entry (size 5, origin alice)
    entry = (string("org.example.notes") + string("a.md") + chash + struct.pack("<Q", len(content))
             + version + vouched + struct.pack("<Q", alice) + bytes([0]))
    got["link_plaintext"] = (bytes([13, 0]) + struct.pack("<I", 1 << 20) + bytes([1])
                             + struct.pack("<I", 1) + entry)
    got["link_frame"] = seal_frame(okm[:32], 0, got["link_plaintext"])
    got["ping_frame"] = seal_frame(okm[32:], 0, bytes([14, 0]))
    got["pong_frame"] = seal_frame(okm[:32], 1, bytes([15, 0]))
    # HAVE with that entry, the initiator's frame 2
    got["have_plaintext"] = bytes([16, 0]) + struct.pack("<I", 1) + entry
    got["have_frame"] = seal_frame(okm[:32], 2, got["have_plaintext"])
    # The responder's control frame 0: it took frames 0 to 2 (ack 3), holds 4
    # and 6 (frames bitmap 0x05, one byte) and parts 0, 2 and 3 of frame 3
    # (offset 0, one-byte parts bitmap 0x0d), asks for the rest again (flag
    # 1), and reports 7 K-frames sent and 70 credits granted; nonce: serial,
    # 0x01, 0^15
    holding = bytes([1, 0x05]) + struct.pack("<HB", 0, 1) + bytes([0x0d])
    ch = bytes([0x12]) + struct.pack("<QQIIB", 0, 3, 7, 70, 1)
    got["control_plaintext"] = holding
    got["control_frame"] = ch + xchacha20poly1305_seal(okm[32:], ch[1:9] + b"\x01" + bytes(15), holding, ch)
    # Key updates (section 5): phase 1's key is BLAKE2b-256 keyed with phase
    # 0's of "baton-key-update-1"; PONG as the initiator's frame 3 in phase 1
    # (marker 0x11 | 1 << 6)
    k_next = hashlib.blake2b(b"baton-key-update-1", digest_size=32, key=okm[:32]).digest()
    got["k_initiator_to_responder_phase1"] = k_next
    h1 = bytes([0x51]) + struct.pack("<QQIIB", 3, 0, 0, 0, 0)
    got["phase1_frame"] = h1 + xchacha20poly1305_seal(k_next, h1[1:9] + bytes(16), bytes([15, 0]), h1)
    # The NOTE of frame 5 sent again in parts of 47 bytes: part 1 (flags 1)
    # of ceil(len / 47), plaintext u8 count || bytes; nonce: number, 0x02,
    # index, 0^14
    size = 47
    count = (len(frame_plain) + size - 1) // size
    ph = bytes([0x13]) + struct.pack("<QQIIB", 5, 0, 0, 0, 1)
    got["part_frame"] = ph + xchacha20poly1305_seal(
        okm[:32], ph[1:9] + b"\x02\x01" + bytes(14), bytes([count]) + frame_plain[size:2 * size], ph)

    # Beacon hashes
    ah = hashlib.blake2b(string("org.example.notes") + string("a.md") + version, digest_size=32).digest()
    got["activity_hash"] = ah[:3]
    # The index summary (section 6.1) of an index holding only that note
    typ, path = "org.example.notes", "a.md"
    position = int.from_bytes(hashlib.blake2b(string(typ) + string(path), digest_size=32).digest()[:4], "big")
    # An entry's fingerprint: BLAKE2b-128 keyed with k_summary (not a
    # truncated BLAKE2b-256: the output length is part of BLAKE2b's parameters)
    def fingerprint(typ, path, chash, deleted=False):
        data = string(typ) + string(path) + chash + (bytes([1]) if deleted else b"")
        return int.from_bytes(hashlib.blake2b(data, digest_size=16, key=got["k_summary"]).digest(), "little")
    fp = fingerprint(typ, path, chash)
    got["index_position"] = position.to_bytes(4, "big")
    got["index_fingerprint"] = fp.to_bytes(16, "little")
    root_count, root_fp = 1, fp % (1 << 128)
    digest = hashlib.blake2b(struct.pack("<Q", root_count) + root_fp.to_bytes(16, "little"), digest_size=32).digest()
    got["index_digest_full"] = digest
    got["index_digest"] = digest[:4]
    entry = (string(typ) + string(path) + chash + struct.pack("<Q", 5) + version + vouched
             + struct.pack("<Q", alice) + bytes([0]))
    # GET_NODES: the root (children or entries, as the responder likes) and
    # the depth-1 node holding the note, entries wanted (flag 0x80)
    got["get_nodes"] = bytes([11]) + struct.pack("<H", 2) + bytes([0]) + struct.pack("<I", 0) \
        + bytes([0x81]) + struct.pack("<I", position >> 28)
    # NODES: the first answered with entries, the second with the root's children
    children = b""
    for c in range(16):
        inside = (position >> 28) == c
        children += struct.pack("<IQ", 1 if inside else 0, (root_fp & 0xFFFFFFFFFFFFFFFF) if inside else 0)
    got["nodes"] = bytes([12]) + struct.pack("<H", 2) + bytes([1]) + struct.pack("<I", 1) + entry \
        + bytes([0]) + children
    got["turn"] = bytes([8]) + digest[:4] + struct.pack("<I", 1) + entry

    # Deletions and renames (sections 7.2, 7.3): a.md deleted by alice at
    # {alice: 3, bob: 1}, then the same bytes as b.md at {alice: 1}
    deleted_version = vv([(alice, 3), (bob, 1)])
    tombstone = (string(typ) + string(path) + chash + struct.pack("<Q", 5) + deleted_version
                 + vouchers(typ, path, [(alice, 3), (bob, 1)]) + struct.pack("<Q", alice) + bytes([1]))
    got["tombstone_fingerprint"] = fingerprint(typ, path, chash, deleted=True).to_bytes(16, "little")
    # A node holding a.md and b.md (same bytes): the sum of their fingerprints
    # modulo 2^128, and the digest of an index holding just those two
    fp_b = fingerprint(typ, "b.md", chash)
    got["index_fingerprint_b"] = fp_b.to_bytes(16, "little")
    pair = (fp + fp_b) % (1 << 128)
    got["index_pair_fingerprint"] = pair.to_bytes(16, "little")
    got["index_pair_digest_full"] = hashlib.blake2b(
        struct.pack("<Q", 2) + pair.to_bytes(16, "little"), digest_size=32).digest()
    got["gone"] = bytes([17]) + struct.pack("<I", 1) + tombstone
    renamed = (string(typ) + string("b.md") + chash + struct.pack("<Q", 5) + vv([(alice, 1)])
               + vouchers(typ, "b.md", [(alice, 1)]) + struct.pack("<Q", alice) + bytes([0]))
    got["moved"] = bytes([18]) + tombstone + renamed

    # Alice's resolvable address with the random part a1 b2 43 (little-endian)
    got["k_address"] = kdf(group, 1, "baton-ad")
    prand = bytes([0xA1, 0xB2, 0x43])
    got["address_prand"] = prand
    got["address"] = hashlib.blake2b(struct.pack("<Q", alice) + prand, digest_size=16,
                                     key=got["k_address"]).digest()[:3] + prand

    # Section 3.3: the beacon content closed (0x10) and asking (0x20), sealed
    # by alice with a resolvable nonce whose random part is a0..a4.
    flagged = bytes([0x01 | 0x10 | 0x20]) + plain[1:]
    got["beacon_flags_plaintext"] = flagged
    random = bytes(range(0xA0, 0xA5))
    nonce = random + hashlib.blake2b(struct.pack("<Q", alice) + random + b"\xbe", digest_size=16,
                                     key=got["k_address"]).digest()[:3]
    got["beacon_resolvable_nonce"] = nonce
    ct = xchacha20_xor(got["k_beacon_enc"], nonce + bytes(16), flagged)
    tag = hashlib.blake2b(header + nonce + ct, digest_size=16, key=got["k_beacon_mac"]).digest()[:8]
    got["beacon_flags"] = header + nonce + ct + tag

    bad = 0
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
