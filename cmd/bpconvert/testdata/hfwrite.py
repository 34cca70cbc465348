# hfwrite.py DIR [DISK]: writes a Hugging Face dataset with datasets itself
# (Dataset.from_dict, to_parquet) into DIR/data.parquet: 40 rows of an
# Image() (one null), an Audio() (WAV bytes), a List(Image()), a binary
# column and a label; and the card as datasets writes its front matter
# (DatasetInfo._to_yaml_dict dumped by yaml.safe_dump): two configs share
# one features list, which PyYAML writes with an anchor and an alias, and
# the default config's data_files is "**". With DISK, the same dataset
# is also saved with Dataset.save_to_disk(DISK).
import io, os, sys, wave, struct, json
import yaml, PIL.Image
import datasets
from datasets import Dataset, Features, Image, Audio, Value, List
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
def png(i):
    b = io.BytesIO(); PIL.Image.new("RGB", (3 + i % 5, 2 + i % 3), ((i * 37) % 256, i % 256, 7)).save(b, "PNG"); return b.getvalue()
def wav(i):
    b = io.BytesIO()
    with wave.open(b, "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(8000)
        w.writeframes(b"".join(struct.pack("<h", (i * 131 + k * 17) % 3000) for k in range(50 + i)))
    return b.getvalue()
n = 40
feats = Features({"image": Image(), "audio": {"bytes": Value("binary"), "path": Value("string")}, "frames": List(Image()),
                  "thumb": Value("binary"), "label": Value("int64")})
rows = {"image": [None if i == 5 else {"bytes": png(i), "path": "img%d.png" % i} for i in range(n)],
        "audio": [{"bytes": wav(i), "path": "a%d.wav" % i} for i in range(n)],
        "frames": [[{"bytes": png(i + j + 100), "path": None} for j in range(i % 3)] for i in range(n)],
        "thumb": [os.urandom(30 + i) for i in range(n)],
        "label": list(range(n))}
ds = Dataset.from_dict(rows, features=feats)
# Audio's encoder needs torchcodec; casting the struct column does not encode anything
ds = ds.cast_column("audio", Audio(sampling_rate=8000, decode=False))
ds.to_parquet(os.path.join(out, "data.parquet"))
# the card as datasets writes its front matter (DatasetInfo._to_yaml_dict, yaml.safe_dump): two configs share one features list, which PyYAML writes with an anchor and an alias
fl = ds.info._to_yaml_dict()["features"]
meta = {"license": "mit", "dataset_info": [{"config_name": "default", "features": fl}, {"config_name": "other", "features": fl}],
        "configs": [{"config_name": "default", "data_files": "**"}, {"config_name": "other", "data_files": "data.parquet"}]}
open(os.path.join(out, "README.md"), "w").write("---\n" + yaml.safe_dump(meta, sort_keys=False) + "---\n# card\n")
if len(sys.argv) > 2:
    ds.save_to_disk(sys.argv[2])
