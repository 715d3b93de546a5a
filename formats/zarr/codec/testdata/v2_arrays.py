# Writes Zarr v2 arrays with zarr-python for codec's TestV2Arrays: each
# compressor and filter codec decodes, with every dtype width and byte
# order and both orders. Next to each store NAME, NAME.expect/KEY holds
# what zarr-python decodes chunk KEY to, as little-endian float64 in C
# order.
# Usage: v2_arrays.py OUTDIR
import os, sys
import numpy as np
import zarr
from numcodecs import Blosc, BZ2, Delta, GZip, LZ4, Shuffle, Zlib, Zstd

out = sys.argv[1]
compressors = {
    "none": None, "zlib": Zlib(5), "gzip": GZip(6), "bz2": BZ2(9), "zstd": Zstd(3), "lz4": LZ4(),
    "blosc-lz4-shuffle": Blosc("lz4", 5, Blosc.SHUFFLE),
    "blosc-zstd-bitshuffle": Blosc("zstd", 3, Blosc.BITSHUFFLE),
    "blosc-blosclz-noshuffle": Blosc("blosclz", 9, Blosc.NOSHUFFLE),
}
dtypes = ["<f8", ">f8", "<f4", ">i4", "<i2", "|u1", "|i1", ">u8", "<f2", "<M8[s]"]
shape, chunks = (23, 37), (10, 16)
base = np.add.outer(np.linspace(-90, 90, shape[0]), np.linspace(0, 7, shape[1]))


def write(name, dtype, order, compressor, filters=None):
    path = os.path.join(out, name)
    if dtype.startswith("<M8"):
        data = (base * 1000).astype("int64").astype(dtype)
    elif dtype[1] in "iu":
        data = np.abs(base * 10).astype(dtype)
    else:
        data = base.astype(dtype)
    z = zarr.open(path, mode="w", shape=shape, chunks=chunks, dtype=dtype, order=order,
                  compressor=compressor, filters=filters, fill_value=0)
    z[...] = data
    exp = path + ".expect"
    os.makedirs(exp)
    for key in os.listdir(path):
        if key.startswith("."):
            continue
        with open(os.path.join(path, key), "rb") as f:
            chunk = z._decode_chunk(f.read())
        if dtype.startswith("<M8"):
            chunk = chunk.view("int64")
        with open(os.path.join(exp, key), "wb") as f:
            f.write(chunk.astype("<f8").tobytes(order="C"))


for cname, comp in compressors.items():
    for order in "CF":
        for dt in dtypes:
            write("%s-%s-%s" % (cname, order, dt.replace("<", "le").replace(">", "be").replace("|", "")
                                .replace("[", "").replace("]", "")), dt, order, comp)
write("delta-f8", "<f8", "C", Zlib(1), [Delta("<f8")])
write("delta-i4", ">i4", "F", Blosc("lz4", 5, Blosc.SHUFFLE), [Delta(">i4")])
write("shuffle-f4", "<f4", "C", Zstd(1), [Shuffle(4)])
write("delta-shuffle-u8", ">u8", "C", GZip(1), [Delta(">u8"), Shuffle(8)])
