# Writes a CF cube with xarray for georef's TestXarrayCube: t2m(time,
# lat, lon) with descending latitude, longitude, a grid mapping variable
# "crs" and zarr-python's default Blosc compressor on every array.
# Usage: xarray_cube.py OUT.zarr
import sys
import numpy as np
import xarray as xr

lat = np.linspace(60.0, 40.0, 21)          # north-up: descending, 1 degree apart
lon = np.arange(20) * 1.5 - 10.0           # 1.5 degrees apart
time = np.datetime64("2026-01-01") + np.arange(3).astype("timedelta64[D]")
t2m = np.random.default_rng(28).normal(280, 5, (3, 21, 20)).astype("float32")
ds = xr.Dataset(
    {"t2m": (("time", "lat", "lon"), t2m, {"grid_mapping": "crs", "units": "K"}),
     "crs": ((), np.int32(0), {"grid_mapping_name": "latitude_longitude",
                                "crs_wkt": 'GEOGCRS["WGS 84",DATUM["World Geodetic System 1984",'
                                           'ELLIPSOID["WGS 84",6378137,298.257223563]],'
                                           'CS[ellipsoidal,2],AXIS["latitude",north],AXIS["longitude",east],'
                                           'ANGLEUNIT["degree",0.0174532925199433],ID["EPSG",4326]]'})},
    coords={"time": time, "lat": ("lat", lat, {"units": "degrees_north"}),
            "lon": ("lon", lon, {"units": "degrees_east"})},
)
ds.to_zarr(sys.argv[1], mode="w", encoding={"t2m": {"chunks": (1, 5, 7)}, "lat": {"chunks": (8,)}})
