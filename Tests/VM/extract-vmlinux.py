#!/usr/bin/env python3
"""Writes the uncompressed kernel (vmlinux, an ELF that qemu boots through its
PVH entry) held in a bzImage: extract-vmlinux.py BZIMAGE OUT.

The compressed payload's place comes from the boot protocol header
(setup_sects at 0x1f1, payload_offset/payload_length at 0x248, protocol 2.08+).
"""
import gzip
import lzma
import struct
import sys

image = open(sys.argv[1], "rb").read()
setup_sectors = image[0x1F1] or 4
offset, length = struct.unpack("<II", image[0x248:0x250])
start = (setup_sectors + 1) * 512 + offset
payload = image[start : start + length]
if payload.startswith(b"\xfd7zXZ\x00"):
    kernel = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(payload)
elif payload.startswith(b"\x1f\x8b"):
    kernel = gzip.decompress(payload)
else:
    sys.exit(f"extract-vmlinux: unknown compression {payload[:6].hex()}")
if not kernel.startswith(b"\x7fELF"):
    sys.exit("extract-vmlinux: the payload is not an ELF kernel")
with open(sys.argv[2], "wb") as out:
    out.write(kernel)
