#!/usr/bin/env python3
"""Independent check of the CPace vectors in Sources/BatonHandoff/PROTOCOL.md.

Recomputes every value of the CPACE-RISTR255-SHA512 vectors (draft-irtf-cfrg-cpace)
from its inputs, with ristretto255 (RFC 9496: decoding, encoding, the one-way map
from 64 bytes, scalar multiplication) written out here in integers and SHA-512
from hashlib: no libsodium and no baton code. Exits 1 on a mismatch.

Run: .venv/bin/python3 Tests/Scripts/verify-cpace-vectors.py
"""
import hashlib
import pathlib
import re
import sys

DOC = pathlib.Path(__file__).resolve().parents[2] / "Sources/BatonHandoff/PROTOCOL.md"

# --- ristretto255 (RFC 9496, section 4) over edwards25519 (a = -1) ---------

P = 2**255 - 19
D = (-121665 * pow(121666, P - 2, P)) % P


def is_negative(x):
    return (x % P) & 1 == 1


def fabs(x):
    x %= P
    return P - x if is_negative(x) else x


def sqrt_ratio_m1(u, v):
    """RFC 9496 4.2: (was_square, sqrt(u/v) or sqrt(i*u/v)), non-negative."""
    u %= P
    v %= P
    r = (u * pow(v, 3, P)) * pow(u * pow(v, 7, P), (P - 5) // 8, P) % P
    check = v * r * r % P
    correct = check == u
    flipped = check == (-u) % P
    flipped_i = check == (-u * SQRT_M1) % P
    if flipped or flipped_i:
        r = r * SQRT_M1 % P
    return correct or flipped, fabs(r)


# The constants as RFC 9496 section 4.1 prints them (it picks the roots; for
# SQRT_AD_MINUS_ONE that is the odd one), each checked against its definition.
SQRT_M1 = 19681161376707505956807079304988542015446066515923890162744021073123829784752
SQRT_AD_MINUS_ONE = 25063068953384623474111414158702152701244531502492656460079210482610430750235
INVSQRT_A_MINUS_D = 54469307008909316920995813868745141605393597292927456921205312896311721017578
ONE_MINUS_D_SQ = (1 - D * D) % P
D_MINUS_ONE_SQ = (D - 1) * (D - 1) % P
assert SQRT_M1 * SQRT_M1 % P == P - 1
assert SQRT_AD_MINUS_ONE * SQRT_AD_MINUS_ONE % P == (-D - 1) % P  # a*d - 1, a = -1
assert INVSQRT_A_MINUS_D * INVSQRT_A_MINUS_D * (-1 - D) % P == 1  # 1/sqrt(a - d)

IDENTITY = (0, 1, 1, 0)


def add(p1, p2):
    """Extended twisted Edwards addition for a = -1 (add-2008-hwcd-3)."""
    x1, y1, z1, t1 = p1
    x2, y2, z2, t2 = p2
    a = (y1 - x1) * (y2 - x2) % P
    b = (y1 + x1) * (y2 + x2) % P
    c = t1 * 2 * D * t2 % P
    d = z1 * 2 * z2 % P
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % P, g * h % P, f * g % P, e * h % P)


def scalar_mult(k, point):
    result = IDENTITY
    while k:
        if k & 1:
            result = add(result, point)
        point = add(point, point)
        k >>= 1
    return result


def decode(data):
    """RFC 9496 4.3.1; None when the bytes are not a canonical encoding."""
    if len(data) != 32:
        return None
    s = int.from_bytes(data, "little")
    if s >= P or is_negative(s):
        return None
    ss = s * s % P
    u1 = (1 - ss) % P
    u2 = (1 + ss) % P
    u2_sqr = u2 * u2 % P
    v = (-(D * u1 * u1) - u2_sqr) % P
    was_square, invsqrt = sqrt_ratio_m1(1, v * u2_sqr)
    den_x = invsqrt * u2 % P
    den_y = invsqrt * den_x * v % P
    x = fabs(2 * s * den_x)
    y = u1 * den_y % P
    t = x * y % P
    if not was_square or is_negative(t) or y == 0:
        return None
    return (x, y, 1, t)


def encode(point):
    """RFC 9496 4.3.2."""
    x0, y0, z0, t0 = point
    u1 = (z0 + y0) * (z0 - y0) % P
    u2 = x0 * y0 % P
    _, invsqrt = sqrt_ratio_m1(1, u1 * u2 * u2)
    den1 = invsqrt * u1 % P
    den2 = invsqrt * u2 % P
    z_inv = den1 * den2 * t0 % P
    ix0 = x0 * SQRT_M1 % P
    iy0 = y0 * SQRT_M1 % P
    enchanted_denominator = den1 * INVSQRT_A_MINUS_D % P
    rotate = is_negative(t0 * z_inv)
    x, y, den_inv = (iy0, ix0, enchanted_denominator) if rotate else (x0, y0, den2)
    if is_negative(x * z_inv):
        y = -y
    s = fabs(den_inv * (z0 - y))
    return s.to_bytes(32, "little")


def elligator(t):
    """RFC 9496 4.3.4, MAP."""
    r = SQRT_M1 * t * t % P
    u = (r + 1) * ONE_MINUS_D_SQ % P
    v = (-1 - r * D) * (r + D) % P
    was_square, s = sqrt_ratio_m1(u, v)
    if not was_square:
        s = (-fabs(s * t)) % P
        c = r
    else:
        c = P - 1
    n = (c * (r - 1) * D_MINUS_ONE_SQ - v) % P
    w0 = 2 * s * v % P
    w1 = n * SQRT_AD_MINUS_ONE % P
    w2 = (1 - s * s) % P
    w3 = (1 + s * s) % P
    return (w0 * w3 % P, w2 * w1 % P, w1 * w3 % P, w0 * w2 % P)


def one_way_map(b):
    """RFC 9496 4.3.4: 64 bytes to an element; each half's top bit is masked."""
    assert len(b) == 64
    t1 = (int.from_bytes(b[:32], "little") & ((1 << 255) - 1)) % P
    t2 = (int.from_bytes(b[32:], "little") & ((1 << 255) - 1)) % P
    return add(elligator(t1), elligator(t2))


# --- CPace (draft-irtf-cfrg-cpace), CPACE-RISTR255-SHA512 --------------------

DSI = b"CPaceRistretto255"
S_IN_BYTES = 128  # SHA-512's input block


def leb128(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def prepend_len(data):
    return leb128(len(data)) + data


def lv_cat(*args):
    return b"".join(prepend_len(a) for a in args)


def generator_string(dsi, prs, ci, sid, s_in_bytes):
    len_zpad = max(0, s_in_bytes - 1 - len(prepend_len(prs)) - len(prepend_len(dsi)))
    return lv_cat(dsi, prs, bytes(len_zpad), ci, sid)


def scalar_mult_vfy(y, encoded):
    point = decode(encoded)
    if point is None:
        return encode(IDENTITY)
    return encode(scalar_mult(y, point))


def vectors():
    text = DOC.read_text()
    block = text.split("<!-- cpace-vectors -->")[1].split("```")[1]
    out = {}
    for line in block.splitlines():
        m = re.match(r"\s*(cpace_[A-Za-z0-9_]+)\s*=\s*([0-9a-f ]+)$", line)
        if m:
            out[m.group(1)] = bytes.fromhex(m.group(2).replace(" ", ""))
    return out


def main():
    v = vectors()
    failures = 0

    def check(name, got):
        nonlocal failures
        if v.get(name) == got:
            print("ok " + name)
        else:
            failures += 1
            print("MISMATCH " + name + ": computed " + got.hex() + ", documented "
                  + (v[name].hex() if name in v else "(missing)"))

    assert leb128(0) == b"\x00" and leb128(127) == b"\x7f" and leb128(128) == b"\x80\x01"
    prs, ci, sid = v["cpace_prs"], v["cpace_ci"], v["cpace_sid"]
    gen_string = generator_string(DSI, prs, ci, sid, S_IN_BYTES)
    check("cpace_generator_string", gen_string)
    gen_hash = hashlib.sha512(gen_string).digest()
    check("cpace_generator_hash", gen_hash)
    g = encode(one_way_map(gen_hash))
    check("cpace_g", g)
    ya = int.from_bytes(v["cpace_ya"], "little")
    yb = int.from_bytes(v["cpace_yb"], "little")
    Ya = scalar_mult_vfy(ya, g)
    Yb = scalar_mult_vfy(yb, g)
    check("cpace_Ya", Ya)
    check("cpace_Yb", Yb)
    k_a = scalar_mult_vfy(ya, Yb)
    k_b = scalar_mult_vfy(yb, Ya)
    check("cpace_K", k_a)
    check("cpace_K", k_b)
    transcript = lv_cat(Ya, v["cpace_ada"]) + lv_cat(Yb, v["cpace_adb"])
    check("cpace_transcript_ir", transcript)
    isk_input = lv_cat(DSI + b"_ISK", sid, k_a) + transcript
    check("cpace_isk_input", isk_input)
    check("cpace_isk_ir", hashlib.sha512(isk_input).digest())
    check("cpace_mult_sX",
          scalar_mult_vfy(int.from_bytes(v["cpace_mult_s"], "little"), v["cpace_mult_X"]))
    # Refused shares: a non-canonical encoding decodes to nothing, and the
    # identity's encoding is all zeros; scalar_mult_vfy gives G.I for both.
    identity = encode(IDENTITY)
    check("cpace_identity", identity)
    if decode(v["cpace_invalid_Y1"]) is not None:
        failures += 1
        print("MISMATCH cpace_invalid_Y1: decodes to an element")
    else:
        print("ok cpace_invalid_Y1 does not decode")
    for name in ("cpace_invalid_Y1", "cpace_identity"):
        check("cpace_identity", scalar_mult_vfy(ya, v[name]))
    # Round trip: decoding then encoding every share gives it back.
    for name in ("cpace_g", "cpace_Ya", "cpace_Yb", "cpace_K", "cpace_mult_X"):
        check(name, encode(decode(v[name])))

    if failures:
        print("%d CPace vector(s) failed" % failures)
        return 1
    print("all CPace vectors verified")
    return 0


if __name__ == "__main__":
    sys.exit(main())
