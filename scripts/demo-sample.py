#!/usr/bin/env python3
"""demo-sample.py OUTDIR: writes the demo's WebDataset sample with Python's
tarfile: two shards of 50 samples, each a 32x32 PNG, a class label and JSON
metadata (fixed mtimes, so the bytes are the same on every run). The writer
is readme_data.py's, which the README's examples use too; it needs only the
standard library."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from readme_data import webdataset  # noqa: E402

webdataset(sys.argv[1])
