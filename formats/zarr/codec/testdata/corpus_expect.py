# For codec's TestCorpus: what zarr-python decodes each chunk of the
# corpus's Zarr v2 arrays (a .zarray at the store's root) to, as
# little-endian float64 in C order, under OUTDIR/STORE/KEY. A store whose
# codec numcodecs lacks here is named in OUTDIR/STORE.skip.
# Usage: corpus_expect.py CORPUS_ZARR_DIR OUTDIR
import os, sys
import zarr

src, out = sys.argv[1], sys.argv[2]
for store in sorted(os.listdir(src)):
    path = os.path.join(src, store)
    if not os.path.isfile(os.path.join(path, ".zarray")):
        continue
    try:
        z = zarr.open_array(zarr.DirectoryStore(path), mode="r")
        decoded = {}
        for key in sorted(os.listdir(path)):
            if key.startswith(".") or key == "zarr.json":
                continue
            with open(os.path.join(path, key), "rb") as f:
                decoded[key] = z._decode_chunk(f.read())
    except Exception as e:  # numcodecs without the codec: the Go side says so too
        with open(os.path.join(out, store + ".skip"), "w") as f:
            f.write("%s: %s" % (type(e).__name__, e))
        continue
    os.makedirs(os.path.join(out, store))
    for key, chunk in decoded.items():
        with open(os.path.join(out, store, key), "wb") as f:
            f.write(chunk.astype("<f8").tobytes(order="C"))
