# Writes Blosc chunks made by numcodecs (the C library zarr-python uses)
# with the raw bytes they hold, for codec's TestBloscMatrix: every
# internal codec x shuffle x typesize x size, compressible and not.
# Usage: blosc_matrix.py OUTDIR
import json, os, sys
import numpy as np
from numcodecs import blosc

out = sys.argv[1]
rng = np.random.default_rng(28)
cases = []
sizes = [0, 1, 7, 1000, 4099, 70001]  # in elements; most are no multiple of 8 or of a block


def data(kind, ts, n):
    nbytes = ts * n
    if kind == "random":
        return rng.integers(0, 256, nbytes, dtype=np.uint8).tobytes()
    if kind == "zeros":
        return bytes(nbytes)
    # smooth: a slowly varying little-endian series, the shape of coordinates
    v = (np.arange(n, dtype=np.float64) * 0.25 + 1000.0)
    b = np.frombuffer(v.tobytes(), dtype=np.uint8)
    b = np.resize(b, nbytes) if nbytes else b[:0]
    return b.tobytes()


for cname in blosc.list_compressors():
    for shuffle in (0, 1, 2):
        for ts in (1, 2, 3, 4, 8, 16, 33):
            for n in sizes:
                if ts not in (1, 4) and n > 9001:
                    n = 9001  # keeps the whole matrix near 60 MB
                for kind in ("smooth", "random", "zeros"):
                    if kind == "zeros" and n not in (0, 4099):
                        continue
                    if kind == "random" and n not in (7, 1000, 4099):
                        continue  # incompressible chunks are mostly memcpyed
                    raw = data(kind, ts, n)
                    arr = np.frombuffer(raw, dtype="V%d" % ts)
                    for clevel, bs in ((5, 0), (9, 256), (0, 0)):
                        if clevel == 0 and n != 1000:
                            continue
                        if bs and n < 1000:
                            continue
                        enc = blosc.compress(arr, cname.encode(), clevel, shuffle, bs)
                        name = "%s-s%d-t%d-n%d-%s-c%d-b%d" % (cname, shuffle, ts, n, kind, clevel, bs)
                        with open(os.path.join(out, name + ".enc"), "wb") as f:
                            f.write(enc)
                        with open(os.path.join(out, name + ".raw"), "wb") as f:
                            f.write(raw)
                        cases.append(name)
with open(os.path.join(out, "cases.json"), "w") as f:
    json.dump({"cases": cases, "cnames": blosc.list_compressors()}, f)
