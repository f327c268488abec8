"""Model files edited by hand for tests: one field of the metadata changed, the data kept."""

import json
import struct


def edit_meta(path, fn, out=None):
    """Rewrite a model file's __metadata__ with fn(meta dict), data untouched, to out (default:
    path itself)."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    h = json.loads(data[8 : 8 + n])
    fn(h["__metadata__"])
    hb = json.dumps(h, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)
    with open(out or path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb + data[8 + n :])
