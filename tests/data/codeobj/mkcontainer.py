#!/usr/bin/env python3
"""Writes offload-bundle containers for the codeobj tests (issue 10), from code objects the
build made. Layouts (little-endian), as clang's OffloadBundler writes them:

  bundle: "__CLANG_OFFLOAD_BUNDLE__", u64 entry count, per entry u64 offset (from the bundle
          start), u64 size, u64 id length, id bytes; then the entries' bytes.
  CCOB:   "CCOB", u16 version, u16 method (0 zlib, 1 zstd); version 2: u32 total size, u32
          uncompressed size; version 3: u64 total size, u64 uncompressed size; then u64 hash
          (low 64 bits of the MD5 of the uncompressed bundle) and the compressed bundle.
  host:   a minimal x86-64 ELF64 relocatable object whose .hip_fatbin section holds the given
          parts, each starting at a multiple of 4096 (clang's .hip_fatbin alignment) with zero
          padding between them.

usage:
  mkcontainer.py bundle OUT [--gap N] ID=FILE...   entries start N bytes apart (unaligned)
  mkcontainer.py ccob OUT VERSION zlib|zlib0|zstd BUNDLE   (zlib0: stored, level 0)
  mkcontainer.py host OUT PART...
  mkcontainer.py decoy OUT       bytes that look like a CCOB header and a bundle header, for a
                                 bundle entry whose payload must not be taken for a bundle
zstd goes through libzstd.so.1 (ctypes), so no Python module beyond the standard library.
"""
import ctypes
import hashlib
import struct
import sys
import zlib

MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"


def bundle(entries, gap):
    ids = [i.encode() for i, _ in entries]
    hdr = len(MAGIC) + 8 + sum(24 + len(i) for i in ids)
    out = bytearray(MAGIC + struct.pack("<Q", len(entries)))
    off = hdr + gap
    offs = []
    for (i, data), ib in zip(entries, ids):
        offs.append(off)
        out += struct.pack("<QQQ", off, len(data), len(ib)) + ib
        off += len(data) + gap
    for o, (_, data) in zip(offs, entries):
        out += b"\0" * (o - len(out)) + data
    return bytes(out)


def zstd_compress(data):
    lib = ctypes.CDLL("libzstd.so.1")
    lib.ZSTD_compressBound.restype = ctypes.c_size_t
    lib.ZSTD_compressBound.argtypes = [ctypes.c_size_t]
    lib.ZSTD_compress.restype = ctypes.c_size_t
    lib.ZSTD_compress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p,
                                  ctypes.c_size_t, ctypes.c_int]
    lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
    cap = lib.ZSTD_compressBound(len(data))
    buf = ctypes.create_string_buffer(cap)
    n = lib.ZSTD_compress(buf, cap, data, len(data), 3)
    if lib.ZSTD_isError(n):
        sys.exit("zstd compression failed")
    return buf.raw[:n]


def ccob(data, version, method):
    if method == "zstd":
        payload, m = zstd_compress(data), 1
    else:
        payload, m = zlib.compress(data, 0 if method == "zlib0" else 6), 0
    h = struct.unpack("<Q", hashlib.md5(data).digest()[:8])[0]
    if version == 2:
        total = 4 + 2 + 2 + 4 + 4 + 8 + len(payload)
        head = b"CCOB" + struct.pack("<HHIIQ", 2, m, total, len(data), h)
    else:
        total = 4 + 2 + 2 + 8 + 8 + 8 + len(payload)
        head = b"CCOB" + struct.pack("<HHQQQ", 3, m, total, len(data), h)
    return head + payload


def host(parts):
    sec = bytearray()
    for p in parts:
        sec += b"\0" * (-len(sec) % 4096) + p
    shstr = b"\0.hip_fatbin\0.shstrtab\0"
    sec_off = 4096
    str_off = sec_off + len(sec)
    sh_off = (str_off + len(shstr) + 7) & ~7
    ehdr = b"\x7fELF" + bytes([2, 1, 1, 0]) + b"\0" * 8
    ehdr += struct.pack("<HHIQQQIHHHHHH", 1, 62, 1, 0, 0, sh_off, 0, 64, 0, 0, 64, 3, 2)
    shdrs = b"\0" * 64
    shdrs += struct.pack("<IIQQQQIIQQ", 1, 1, 2, 0, sec_off, len(sec), 0, 0, 4096, 0)
    shdrs += struct.pack("<IIQQQQIIQQ", 12, 3, 0, 0, str_off, len(shstr), 0, 0, 1, 0)
    out = bytearray(ehdr)
    out += b"\0" * (sec_off - len(out)) + sec + shstr
    out += b"\0" * (sh_off - len(out)) + shdrs
    return bytes(out)


def main(argv):
    cmd, out = argv[1], argv[2]
    if cmd == "bundle":
        args, gap = argv[3:], 0
        if args[0] == "--gap":
            gap, args = int(args[1]), args[2:]
        entries = []
        for a in args:
            i, f = a.split("=", 1)
            entries.append((i, open(f, "rb").read()))
        data = bundle(entries, gap)
    elif cmd == "ccob":
        data = ccob(open(argv[5], "rb").read(), int(argv[3]), argv[4])
    elif cmd == "decoy":
        data = (b"CCOB" + struct.pack("<HHQQQ", 3, 1, 1 << 40, 1 << 41, 0) + MAGIC +
                struct.pack("<Q", 1000) + b"\xff" * 64)
    elif cmd == "host":
        data = host([open(f, "rb").read() for f in argv[3:]])
    else:
        sys.exit(__doc__)
    open(out, "wb").write(data)


if __name__ == "__main__":
    main(sys.argv)
