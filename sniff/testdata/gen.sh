#!/bin/sh
# Regenerates the sniff fixtures in this directory with real tools.
# Needs ffmpeg (Debian 12: 5.1.x with libwebp, libmp3lame, libvorbis, libx264, libvpx),
# and /usr/bin/python3 with python3-numpy and python3-reportlab (Debian 12 packages).
# Run from this directory: sh gen.sh
set -eu
ff() { ffmpeg -nostdin -hide_banner -loglevel error -y "$@"; }
img="-f lavfi -i testsrc=size=16x16:rate=1 -frames:v 1 -map_metadata -1 -bitexact"
aud="-f lavfi -i sine=frequency=440:sample_rate=8000:duration=0.1 -map_metadata -1 -bitexact"
vid="-f lavfi -i testsrc=size=32x32:rate=10:duration=0.5 -map_metadata -1"
ff $img sample.jpg
ff $img sample.png
ff $img -c:v libwebp sample.webp
ff $img sample.gif
ff $img sample.bmp
ff $img sample.tiff
ff $aud sample.flac
ff $aud sample.wav
ff $aud -c:a libvorbis sample.ogg
ff $aud -c:a libopus -ar 48000 sample.opus
ff $aud -c:a libmp3lame -id3v2_version 0 -write_xing 0 sample.mp3
ff $aud -c:a libmp3lame -id3v2_version 4 -metadata title=bpconvert sample-id3.mp3
ff $vid -c:v libx264 -pix_fmt yuv420p -movflags +faststart sample.mp4
ff $vid -c:v libx264 -pix_fmt yuv420p sample.mkv
ff $vid -c:v libvpx -b:v 100k sample.webm
/usr/bin/python3 - <<'PY'
import json, numpy
from reportlab.pdfgen import canvas
numpy.save("sample.npy", numpy.arange(12, dtype="<f4").reshape(3, 4))
c = canvas.Canvas("sample.pdf", pageCompression=0, invariant=1)
c.drawString(72, 720, "bpconvert sniff fixture")
c.save()
with open("sample.json", "w") as f:
    json.dump({"caption": "a cat on a mat", "width": 640, "height": 480, "tags": ["cat", "mat"]}, f)
with open("sample-long.json", "w") as f:
    json.dump([{"id": i, "caption": "sample caption number %d" % i} for i in range(200)], f)
with open("sample.txt", "w") as f:
    f.write("a cat sitting on a mat in the sun\n")
PY
