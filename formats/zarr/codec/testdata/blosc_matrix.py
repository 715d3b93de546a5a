# Writes Blosc chunks made by numcodecs (the C library zarr-python uses)
# with the raw bytes they hold, for codec's TestBloscMatrix: every
# internal codec x shuffle x typesize x size, compressible and not, and
# byte counts that are no multiple of the typesize or the block size.
# Usage: blosc_matrix.py OUTDIR
import ctypes, ctypes.util, json, os, sys
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
# Byte counts that are no multiple of the typesize: numcodecs always
# passes whole elements, so call the same C library directly.
lib = ctypes.CDLL(ctypes.util.find_library("blosc") or "libblosc.so.1")
lib.blosc_init()
for cname in blosc.list_compressors():
    lib.blosc_set_compressor(cname.encode())
    for shuffle in (0, 1, 2):
        for ts in (4, 8):
            for nbytes, bs in ((1001, 0), (4099 * 8 + 5, 0), (70001 * 4 + 3, 0), (70001 * 4 + 3, 4096)):
                raw = data("smooth", 1, nbytes)
                lib.blosc_set_blocksize(ctypes.c_size_t(bs))
                dest = ctypes.create_string_buffer(nbytes + 16)
                n = lib.blosc_compress(5, shuffle, ctypes.c_size_t(ts), ctypes.c_size_t(nbytes), raw,
                                       dest, ctypes.c_size_t(nbytes + 16))
                if n <= 0:
                    sys.exit("blosc_compress: %d" % n)
                name = "%s-s%d-t%d-b%d-odd%d" % (cname, shuffle, ts, bs, nbytes)
                with open(os.path.join(out, name + ".enc"), "wb") as f:
                    f.write(dest.raw[:n])
                with open(os.path.join(out, name + ".raw"), "wb") as f:
                    f.write(raw)
                cases.append(name)
lib.blosc_set_blocksize(ctypes.c_size_t(0))
with open(os.path.join(out, "cases.json"), "w") as f:
    json.dump({"cases": cases, "cnames": blosc.list_compressors()}, f)
