"""Reads every member of the given zip shards with Python's zipfile (an
independent reader) and prints one line per member: shard, name, size,
SHA-256 of the bytes, and the flag bits of the local header."""
import hashlib
import struct
import sys
import zipfile

for path in sys.argv[1:]:
    with zipfile.ZipFile(path) as z, open(path, "rb") as raw:
        bad = z.testzip()
        if bad is not None:
            print(f"BAD {path} {bad}")
            sys.exit(1)
        for info in z.infolist():
            h = hashlib.sha256()
            with z.open(info) as f:
                while True:
                    b = f.read(1 << 20)
                    if not b:
                        break
                    h.update(b)
            raw.seek(info.header_offset)
            local = raw.read(30)
            flags = struct.unpack("<H", local[6:8])[0]
            print(f"{path}\t{info.filename}\t{info.file_size}\t{h.hexdigest()}\t{flags}\t{info.compress_type}")
