"""Writes hostile pack shards: OUTDIR/VARIANT/pack-0000.zip for each variant
named on the command line. Each shard is written by Python's zipfile
(ZIP_STORED) with two members, a.bin and b.bin; then one header field of
a.bin is patched, in its local header or its central directory entry.
"stream-dd" is written by zipfile to a stream it cannot seek, so that it
defers a.bin's and b.bin's CRC-32 and sizes to data descriptors;
"zip64-local" is intact, its a.bin written with force_zip64, so that its
local header keeps its sizes in a zip64 extra field; "long-extra" is
intact, its a.bin with a 100-byte extra field of an unknown kind in both
headers (longer than a reader's first read of a header takes).

usage: hostile.py OUTDIR VARIANT...
"""
import io
import os
import struct
import sys
import zipfile

A = b"payload of member a\n" * 10
B = b"payload of member b\n"


class Unseekable(io.RawIOBase):
    def __init__(self, f):
        self.f = f

    def writable(self):
        return True

    def write(self, b):
        return self.f.write(b)


def write(path, stream=False, zip64=False, extra=False):
    with open(path, "wb") as f:
        out = Unseekable(f) if stream else f
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
            if zip64:
                with z.open("a.bin", "w", force_zip64=True) as m:
                    m.write(A)
            elif extra:
                info = zipfile.ZipInfo("a.bin")
                info.extra = struct.pack("<HH", 0xCAFE, 96) + bytes(range(96))
                z.writestr(info, A)
            else:
                z.writestr("a.bin", A)
            z.writestr("b.bin", B)


def central_entries(b):
    """Offsets of the central directory entries, in order."""
    end = b.rindex(b"PK\x05\x06")
    count, _, start = struct.unpack("<HII", b[end + 10 : end + 20])
    out, p = [], start
    for _ in range(count):
        n, m, k = struct.unpack("<HHH", b[p + 28 : p + 34])
        out.append(p)
        p += 46 + n + m + k
    return out


def patch(path, variant):
    b = bytearray(open(path, "rb").read())
    loc = 0  # a.bin is the first member
    cen = central_entries(b)[0]
    crc = struct.unpack("<I", b[loc + 14 : loc + 18])[0]
    if variant == "encrypted-local":
        b[loc + 6] |= 0x01
    elif variant == "strong-encrypted-local":
        b[loc + 6] |= 0x40
    elif variant == "encrypted-central":
        b[cen + 8] |= 0x01
    elif variant == "method-local":
        struct.pack_into("<H", b, loc + 8, 8)
    elif variant == "method-central":
        struct.pack_into("<H", b, cen + 10, 8)
    elif variant == "size-local":
        struct.pack_into("<II", b, loc + 18, len(A) - 1, len(A) - 1)
    elif variant == "stored-size-central":
        struct.pack_into("<I", b, cen + 20, len(A) - 1)
    elif variant == "name-local":
        b[loc + 30] = ord("x")
    elif variant == "crc-local":
        struct.pack_into("<I", b, loc + 14, crc ^ 1)
    elif variant == "crc":
        # both headers agree on a CRC-32 the payload does not have
        struct.pack_into("<I", b, loc + 14, crc ^ 1)
        struct.pack_into("<I", b, cen + 16, crc ^ 1)
    elif variant == "dd-flag-local":
        b[loc + 6] |= 0x08
    elif variant != "intact":
        raise SystemExit(f"unknown variant {variant}")
    open(path, "wb").write(bytes(b))


def main():
    outdir = sys.argv[1]
    for variant in sys.argv[2:]:
        d = os.path.join(outdir, variant)
        os.makedirs(d)
        p = os.path.join(d, "pack-0000.zip")
        write(p, stream=variant == "stream-dd", zip64=variant == "zip64-local", extra=variant == "long-extra")
        if variant not in ("stream-dd", "zip64-local", "long-extra"):
            patch(p, variant)


main()
