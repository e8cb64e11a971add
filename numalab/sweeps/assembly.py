"""Assembly: one point's Dataset made independent of a file round trip, and every point's
Dataset stacked into one labelled Dataset.

The dims of the result are the grid keys that have **more than one value** (in grid order),
then ``seed`` (always a dim, even for one seed), then any dims of the model's own variables.
A grid key with a single value is kept as a scalar coordinate; parameters the grid does not name
are not coordinates. ``attrs["parameters"]`` is a JSON record of **every** parameter (defaults
included, lists for the swept ones), ``attrs["swept"]`` the swept names, ``attrs["seeds"]`` the
seeds; model attrs equal for all points are kept (a clashing name gets a ``model_`` prefix).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np

from numalab._version import __version__

from .grid import Grid, canon

__all__ = ["assemble", "normalise_point_ds", "canon_attr"]

_RESERVED_ATTRS = {"numalab_version", "sweep_kind", "parameters", "swept", "seeds", "title"}


def canon_attr(v) -> str:
    """Canonical JSON of an attr value (anything not JSON-able as its str)."""
    return json.dumps(v, sort_keys=True, default=str)


def _clean_attrs(attrs: Mapping) -> dict:
    """netCDF-safe attrs that compare equal before and after a file round trip."""
    out = {}
    for k, v in attrs.items():
        if isinstance(v, np.ndarray):
            v = v.tolist()
        elif isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, bool):
            v = int(v)
        elif v is None:
            v = ""
        elif isinstance(v, Mapping):
            v = json.dumps(v, sort_keys=True, default=str)
        elif isinstance(v, (list, tuple)):
            v = [int(x) if isinstance(x, bool) else x for x in v]
            if len(v) == 1:  # netCDF stores a 1-element list as a scalar
                v = v[0]
        out[str(k)] = v
    return out


def normalise_point_ds(ds):
    """Drop point-specific scalar coords and dims no variable uses (left by dropped series),
    and make dtypes/attrs independent of a file round trip."""
    used = {d for v in ds.data_vars.values() for d in v.dims}
    ds = ds.drop_vars([c for c in ds.coords if ds[c].ndim == 0 or not set(ds[c].dims) <= used])
    for name in list(ds.variables):
        var = ds.variables[name]
        if var.dtype == object:
            ds[name] = var.copy(data=np.asarray(var.values).astype(str))
        ds[name].attrs = _clean_attrs(ds[name].attrs)
    ds.attrs = _clean_attrs(ds.attrs)
    for name in ds.variables:
        ds[name].encoding = {}
    return ds


def _stack_same(results: list, dims: list, shape: list):
    """Every point has the same variables and shapes: stack them in one reshape."""
    import xarray as xr

    first = results[0]
    data_vars = {}
    for v in first.data_vars:
        arr = np.stack([r[v].values for r in results]).reshape(shape + list(first[v].shape))
        data_vars[v] = (dims + list(first[v].dims), arr, dict(first[v].attrs))
    coords = {c: first.coords[c] for c in first.coords}
    return xr.Dataset(data_vars, coords=coords)


def _stack_outer(results: list, dims: list, shape: list):
    """Model dims differ between points (e.g. series of different length): outer join on the
    model's index coords, missing cells NaN (integers become floats)."""
    import xarray as xr

    cat = xr.concat(results, dim="point", join="outer", combine_attrs="drop", coords="minimal",
                    compat="override", data_vars="all")
    var_attrs = {}
    for r in results:  # a variable only some points have (NaN elsewhere) keeps its attrs
        for v in r.data_vars:
            var_attrs.setdefault(v, dict(r[v].attrs))
    data_vars = {}
    for v in cat.data_vars:
        var = cat[v].transpose("point", ...)
        arr = var.values
        data_vars[v] = (dims + list(var.dims[1:]), arr.reshape(shape + list(arr.shape[1:])), var_attrs[v])
    coords = {c: cat.coords[c] for c in cat.coords if c in cat.dims and c != "point"}
    return xr.Dataset(data_vars, coords=coords)


def _coord_array(vals: list) -> np.ndarray:
    if all(isinstance(v, int) for v in vals):
        return np.asarray(vals, dtype=np.int64)
    if all(isinstance(v, (int, float)) for v in vals):
        return np.asarray(vals, dtype=np.float64)
    return np.asarray([str(v) for v in vals])  # mixed ints and names ("adaptive") -> strings


def _label(ds, grid: Grid):
    """Coordinates of the grid keys (swept: dims; fixed: scalars) and of the seeds."""
    for name in grid.keys:  # parameters left at their default are recorded in attrs only
        p = grid.params[name]
        vals = grid.values[name]
        if name in grid.swept:
            ds = ds.assign_coords({name: (name, _coord_array(vals), p.coord_attrs())})
        else:
            ds = ds.assign_coords({name: ((), _coord_array(vals)[0], p.coord_attrs())})
    return ds.assign_coords(seed=("seed", np.asarray(grid.seeds, dtype=np.int64),
                                  {"units": "1", "long_name": "random seed of the replica"}))


def _attrs(grid: Grid, results: list) -> dict:
    first = results[0]
    shared = {}
    for k, v in first.attrs.items():
        if k == "numalab_version" and v == __version__:
            continue  # set below
        if all(canon_attr(r.attrs.get(k, None)) == canon_attr(v) for r in results):
            shared[k if k not in _RESERVED_ATTRS else f"model_{k}"] = v
    return {
        **shared,
        "numalab_version": __version__,
        "sweep_kind": grid.kind,
        "parameters": canon({n: grid.values[n] if n in grid.swept else grid.values[n][0] for n in grid.names}),
        "swept": list(grid.swept) if len(grid.swept) != 1 else grid.swept[0],
        "seeds": canon(grid.seeds),
        "title": f"numalab {grid.kind} sweep over {', '.join(grid.swept) or 'seeds'}",
    }


def assemble(grid: Grid, results: list):
    """Stack one Dataset per point into the (swept..., seed, model dims...) Dataset."""
    first = results[0]
    dims = list(grid.swept) + ["seed"]
    shape = [len(grid.values[d]) for d in grid.swept] + [len(grid.seeds)]
    # points are in C order of (all names..., seed); fixed names have length 1, so a reshape works
    same = all(
        set(r.data_vars) == set(first.data_vars)
        and all(r[v].dims == first[v].dims and r[v].shape == first[v].shape for v in first.data_vars)
        for r in results
    )
    ds = (_stack_same if same else _stack_outer)(results, dims, shape)
    ds = _label(ds, grid)
    ds.attrs = _attrs(grid, results)
    return ds
