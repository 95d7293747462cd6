"""Experimental: DENSIFY (code 20000), a sparse tensor expanded to a dense one.

Off by default: validation refuses the code unless the environment variable
``GPU_DRIVER_EXPERIMENTAL=1`` is set (read at each validation, :mod:`gpu_driver.validation`).  With
it on, the reference device and the accelerators (``densify.cl``) run DENSIFY.
Adding it does not change the feature level the driver reports (its level is
``hal.types.FEATURE_LEVEL_EXPERIMENTAL``, outside the levels ``catalog.implemented_feature_level``
counts).

The format (TACO-style, TF Lite's sparsity parameters; operations.md App. A, AOSP Densify.cpp):
a dense tensor of rank n, optionally cut into blocks of rank k (0 ≤ k ≤ n), is stored as n + k
*levels* walked in the **traversal order** — its first n entries a permutation of the dimensions
0…n−1, its last k a permutation of the block dimensions n…n+k−1.  The **block map** [k] names the
dimension each block dimension divides (strictly increasing).  Level i has a **size** and a
**format**: DENSE (each coordinate 0…size−1 is stored) or SPARSE_CSR (array segments and array
indices: position p of the level above owns the coordinates ``indices[segments[p]:segments[p+1]]``;
the positions of a level are numbered in traversal order).  The values are the leaves in traversal
order; every element not stored is 0 (the zero point for Q8A, Q8AS and Q16A).  Dimension d of the
dense tensor is the size of its level times the sizes of the blocks that divide it.

Operands: 0 values [N] (F32, F16, I32, Q8A, Q8AS, Q8S, Q16S, Q16A, B8); 1 traversal order I32
[n+k]; 2 block map I32 [k] (NO_VALUE when k = 0); 3 formats I32 [n+k] (0 DENSE, 1 SPARSE_CSR); 4
sizes I32 [n+k], one per level in traversal order; then per level a pair (segments, indices) of
I32 [*], both NO_VALUE for a DENSE level — 5 + 2·(n+k) inputs.  Output: the dense tensor, of input
0's type and quantization.

:func:`expand_sparse` is the driver's one sparse → dense routine; the TF Lite importer folds sparse
constants with it.  This driver checks the metadata AOSP takes on trust (permutations, CSR
segments, index ranges, the number of values) and refuses what contradicts itself; where AOSP
derives a block's size from ``sizes[traversal_order[n + j]]`` this module takes the size of the
level that walks block dimension n + j — the same number for every AOSP example (block orders that
are the identity or a swap).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..compiler.lowering_helpers import Work, bits_ctype, known, params_ok
from ..errors import failure, invalid
from ..hal.abbreviations import B8, F16, F32, I32, Q8A, Q8AS, Q8S, Q16A, Q16S
from ..hal.types import UINT32_MAX, OperationType
from ..sizes import element_count
from .definition import OpParams, ShapeUnknown, TensorInfo, presence, require, same_quant_as_input
from .registry import operation
from .shape_ops import int_values
from .signature import OpContext, OpSignature, Variant

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..compiler.lowering import LoweringContext

DENSE, SPARSE_CSR = 0, 1
#: the largest dense rank (numpy's limit on array dimensions); a tensor has at most twice as many levels
MAX_RANK = 32
#: inputs before the first (segments, indices) pair
_FIXED_INPUTS = 5
_ZERO_POINT_FILLED = (Q8A, Q8AS, Q16A)


class SparseFormatError(ValueError):
    """Sparse metadata that contradict themselves (the message says how)."""


@dataclass(frozen=True)
class SparseLevel:
    """One level of the traversal: DENSE (``segments`` and ``indices`` None) or SPARSE_CSR."""

    size: int
    segments: Sequence[int] | None = None
    indices: Sequence[int] | None = None

    @property
    def dense(self) -> bool:
        return self.segments is None


# ---- the format ----------------------------------------------------------------------------------------

def dense_shape(order: Sequence[int], block_map: Sequence[int], sizes: Sequence[int]) -> tuple[int, ...]:
    """The shape of the dense tensor that traversal ``order``, ``block_map`` and the level ``sizes``
    describe; SparseFormatError when they contradict each other."""
    order, block_map, sizes = [int(v) for v in order], [int(v) for v in block_map], [int(v) for v in sizes]
    levels, k = len(order), len(block_map)
    n = levels - k
    if len(sizes) != levels:
        raise SparseFormatError(f"{len(sizes)} level sizes for a traversal order of {levels} levels")
    if not 1 <= n <= MAX_RANK or k > n:
        raise SparseFormatError(f"a traversal order of {levels} levels and a block map of {k} give a dense "
                                f"rank of {n}; it must be in [1, {MAX_RANK}] and at least the {k} block "
                                "dimensions")
    if sorted(order[:n]) != list(range(n)) or sorted(order[n:]) != list(range(n, levels)):
        blocks = f" and its last {k} a permutation of {n}…{levels - 1}" if k else ""
        raise SparseFormatError(f"traversal order {order}: its first {n} entries must be a permutation of "
                                f"0…{n - 1}{blocks}")
    if any(not 0 <= d < n for d in block_map) or any(a >= b for a, b in zip(block_map, block_map[1:])):
        raise SparseFormatError(f"block map {block_map} must be strictly increasing dimensions in [0, {n})")
    if any(s < 1 for s in sizes):
        raise SparseFormatError(f"level sizes {sizes} must all be ≥ 1")
    size_of = {dim: size for dim, size in zip(order, sizes)}
    shape = [size_of[d] for d in range(n)]
    for j, d in enumerate(block_map):
        shape[d] *= size_of[n + j]
    return tuple(shape)


def stored_count(levels: Sequence[SparseLevel]) -> int:
    """The number of values ``levels`` store (leaves of the traversal); SparseFormatError when a
    SPARSE_CSR level's segments or indices are inconsistent."""
    parents = 1
    for i, level in enumerate(levels):
        if level.dense:
            parents *= int(level.size)
            continue
        segments = np.asarray(level.segments, np.int64).reshape(-1)
        indices = np.asarray(level.indices, np.int64).reshape(-1)
        if segments.size != parents + 1:
            raise SparseFormatError(f"level {i}: {segments.size} array segments, expected {parents + 1} "
                                    f"(one more than the {parents} positions of the level above)")
        if segments[0] != 0 or np.any(np.diff(segments) < 0) or segments[-1] != indices.size:
            raise SparseFormatError(f"level {i}: array segments {segments.tolist()} must start at 0, never "
                                    f"decrease and end at the number of array indices ({indices.size})")
        if indices.size and (indices.min() < 0 or indices.max() >= level.size):
            raise SparseFormatError(f"level {i}: array indices {indices.tolist()} must be in [0, {level.size})")
        parents = int(indices.size)
    return parents


def expand_sparse(values: np.ndarray, order: Sequence[int], block_map: Sequence[int],
                  levels: Sequence[SparseLevel], fill=0) -> np.ndarray:
    """The dense tensor of the sparse one (``values`` in traversal order, see the module docstring);
    the elements not stored hold ``fill``.  SparseFormatError for inconsistent metadata."""
    values = np.asarray(values).reshape(-1)
    shape = dense_shape(order, block_map, [level.size for level in levels])
    count = stored_count(levels)
    if values.size != count:
        raise SparseFormatError(f"{values.size} values, but the metadata store {count}")
    # walk level by level: coords[i] holds level i's coordinate of every position of the deepest level
    coords: list[np.ndarray] = []
    parents = 1
    for level in levels:
        if level.dense:
            coords = [np.repeat(c, level.size) for c in coords]
            coords.append(np.tile(np.arange(level.size, dtype=np.int64), parents))
            parents *= level.size
        else:
            children = np.diff(np.asarray(level.segments, np.int64).reshape(-1))
            coords = [np.repeat(c, children) for c in coords]
            coords.append(np.asarray(level.indices, np.int64).reshape(-1))
            parents = coords[-1].size
    n = len(shape)
    dense = [None] * n
    for c, dim in zip(coords, order):
        if dim < n:
            dense[dim] = c
    for c, dim in zip(coords, order):
        if dim >= n:  # a block coordinate refines the coordinate of the dimension it divides
            j = dim - n
            d = int(block_map[j])
            dense[d] = dense[d] * int(levels[list(order).index(dim)].size) + c
    out = np.full(shape, fill, dtype=values.dtype)
    out[tuple(dense)] = values
    return out


# ---- the operation ---------------------------------------------------------------------------------------

@dataclass
class DensifyParams(OpParams):
    """The traversal (``order``, ``block_map``) and per level its format and size."""

    order: tuple[int, ...] = ()
    block_map: tuple[int, ...] = ()
    formats: tuple[int, ...] = ()
    sizes: tuple[int, ...] = ()


def _check_densify(ctx: OpContext, t) -> int:
    """5 + 2·(n+k) inputs, every one of rank 1 (the count checked against the traversal order's
    declared length when it is known)."""
    n_in = len(ctx.op.inputs)
    if (n_in - _FIXED_INPUTS) % 2 or n_in > _FIXED_INPUTS + 4 * MAX_RANK:
        ctx.fail(f"{n_in} inputs: DENSIFY takes 5 + 2·(levels) inputs, at most {2 * MAX_RANK} levels")
    order_dims = list(ctx.inp(1).dimensions)
    if len(order_dims) == 1 and order_dims[0] and n_in != _FIXED_INPUTS + 2 * order_dims[0]:
        ctx.fail(f"{n_in} inputs for a traversal order of {order_dims[0]} levels: expected "
                 f"{_FIXED_INPUTS + 2 * order_dims[0]}")
    return 1


SIGNATURE = OpSignature(
    {F32: 1, I32: 1, Q8A: 1, F16: 3, B8: 3, Q8S: 3, Q16S: 3, Q16A: 3, Q8AS: 4},
    (Variant("densify", ("T", I32, I32, I32, I32, I32, I32), ("T",), variadic_last=True),),
    omittable=frozenset({2, *range(_FIXED_INPUTS, _FIXED_INPUTS + 4 * MAX_RANK)}),
    ranks={i: (1, 1) for i in range(6)},
    variadic_ranks=(1, 1),
    same_quant=((0, 0),),
    check=_check_densify,
)


def _known_present(info: TensorInfo) -> bool:
    """Whether an optional input is given (ShapeUnknown while a request decides it)."""
    given = presence(info)
    if given is None:
        raise ShapeUnknown(f"operand {info.index}: presence not known before execution")
    return given


def _levels(params: DensifyParams, inputs: list[TensorInfo]) -> list[SparseLevel]:
    """The levels with the values of their segments and indices (ShapeUnknown when not known yet)."""
    levels = []
    for i, (fmt, size) in enumerate(zip(params.formats, params.sizes)):
        if fmt == DENSE:
            levels.append(SparseLevel(size))
            continue
        segments, indices = inputs[_FIXED_INPUTS + 2 * i], inputs[_FIXED_INPUTS + 2 * i + 1]
        levels.append(SparseLevel(size, int_values(segments, "DENSIFY", f"level {i}'s array segments"),
                                  int_values(indices, "DENSIFY", f"level {i}'s array indices")))
    return levels


def reference_densify(params: DensifyParams, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> list[np.ndarray]:
    values, out = inputs[0], outputs[0]
    fill = values.zero_point if values.type in _ZERO_POINT_FILLED else 0
    try:
        dense = expand_sparse(np.asarray(values.array(), out.dtype), params.order, params.block_map,
                              _levels(params, inputs), fill)
    except SparseFormatError as err:
        raise failure(f"DENSIFY: {err}") from None
    return [dense]


# ---- lowering ----------------------------------------------------------------------------------------------

#: the kernels index with int32
_INT_LIMIT = 2 ** 31 - 1


def _level_divisors(params: DensifyParams) -> list[int]:
    """Per level, what a dense element's flat index is divided by before ``% size`` to give the
    level's coordinate: the stride of the dimension it walks, times the block size when a block
    divides that dimension and the level walks the blocks (not the coordinate inside one)."""
    shape = params.output_shapes[0]
    n = len(shape)
    strides = [1] * n
    for d in range(n - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    size_of = dict(zip(params.order, params.sizes))
    block_of = {d: n + j for j, d in enumerate(params.block_map)}
    divisors = []
    for dim in params.order:
        if dim >= n:  # inside a block
            divisors.append(strides[params.block_map[dim - n]])
        else:
            divisors.append(strides[dim] * (size_of[block_of[dim]] if dim in block_of else 1))
    return divisors


def _array_inputs(params: DensifyParams) -> list[int]:
    """The input positions of the SPARSE_CSR levels' segments and indices, level by level."""
    return [_FIXED_INPUTS + 2 * i + k for i, fmt in enumerate(params.formats) if fmt == SPARSE_CSR for k in (0, 1)]


def _array_lengths(params: DensifyParams, inputs: list[TensorInfo]) -> tuple[list[tuple[int, int]], bool]:
    """Per level the lengths of its (segments, indices), (0, 0) for a DENSE level, and whether they
    can describe the values (the number of segments one more than the positions of the level above,
    as many leaves as values; else the execution fails, as on the reference device)."""
    lengths, parents, consistent = [], 1, True
    for i, (fmt, size) in enumerate(zip(params.formats, params.sizes)):
        if fmt == DENSE:
            lengths.append((0, 0))
            parents *= size
            continue
        segments, indices = (element_count(inputs[_FIXED_INPUTS + 2 * i + k].shape) for k in (0, 1))
        consistent = consistent and segments == parents + 1
        lengths.append((segments, indices))
        parents = indices
    return lengths, consistent and parents == element_count(inputs[0].shape)


def supports_densify(ctx: LoweringContext) -> bool:
    """Every operand type; the traversal (order, block map, formats, sizes) fixed for the kernels;
    segments and indices constants or tensors the request brings (checked on the device)."""
    if not params_ok(ctx) or not all(ctx.is_constant(i) for i in (1, 3, 4)):
        return False
    inputs = ctx.inputs
    if not inputs[2].omitted and not ctx.is_constant(2):
        return False
    if not known(inputs[0], ctx.outputs[0], *(inputs[i] for i in _array_inputs(ctx.params))):
        return False
    lengths, _ = _array_lengths(ctx.params, inputs)
    return element_count(ctx.outputs[0].shape) <= _INT_LIMIT and sum(a + b for a, b in lengths) <= _INT_LIMIT


def _strictly_increasing(levels: Sequence[SparseLevel]) -> bool:
    """Every SPARSE_CSR level's indices increase strictly within each segment (binary search)."""
    for level in levels:
        if level.dense:
            continue
        indices = np.asarray(level.indices, np.int64).reshape(-1)
        starts = np.asarray(level.segments, np.int64).reshape(-1)[1:-1]
        starts = starts[(starts > 0) & (starts < indices.size)]
        within = np.ones(max(indices.size - 1, 0), bool)
        within[starts - 1] = False  # the step from one segment's last index to the next one's first
        if np.any(np.diff(indices)[within] <= 0):
            return False
    return True


def _c_list(values) -> str:
    """Integers as the body of a C array initializer (one literal per level)."""
    return ", ".join(str(int(v)) for v in values)


def lower_densify(ctx: LoweringContext) -> None:
    """densify.cl: the CSR arrays in one int buffer (a constant, or copied there on the device and
    checked there when the request brings them), then one work item per dense element."""
    p = ctx.params
    inputs, out = ctx.inputs, ctx.outputs[0]
    count = element_count(out.shape)
    if count == 0:
        return
    lengths, consistent = _array_lengths(p, inputs)
    offsets, total = [], 0
    for seg_len, ind_len in lengths:
        offsets.append((total, total + seg_len))
        total += seg_len + ind_len
    sparse = [i for i, fmt in enumerate(p.formats) if fmt == SPARSE_CSR]
    arrays = _array_inputs(p)
    fill = inputs[0].zero_point if inputs[0].type in _ZERO_POINT_FILLED else 0
    d = {"T": bits_ctype(inputs[0]), "MODE": 2, "COUNT": count, "FILL": fill, "LEVELS": len(p.order),
         "FORMATS": _c_list(p.formats), "SIZES": _c_list(p.sizes), "DIVS": _c_list(_level_divisors(p)),
         "SEGS": _c_list(o[0] for o in offsets), "INDS": _c_list(o[1] for o in offsets),
         "SEG_LENS": _c_list(n[0] for n in lengths), "IND_LENS": _c_list(n[1] for n in lengths),
         "OFFSET": 0, "STATUS": 0, "SORTED": 0, "CONSISTENT": int(consistent), "STATUS_CODE": ctx.status_code}
    if all(ctx.is_constant(i) for i in arrays):
        levels = _levels(p, inputs)
        parts = [np.asarray(a, np.int32) for level in levels if not level.dense
                 for a in (level.segments, level.indices)]
        meta = ctx.constant(np.concatenate([*parts, np.zeros(1, np.int32)]))
        d["SORTED"] = int(_strictly_increasing(levels))
        ctx.emit("densify.cl", d, [ctx.input(0), meta], [ctx.output(0)], (count,), Work.ELEMENTS)
        return
    meta = ctx.scratch(np.int32, max(total, 1))
    for i in sparse:
        for k in (0, 1):
            n = lengths[i][k]
            if n:
                ctx.emit("densify.cl", {**d, "MODE": 0, "COUNT": n, "OFFSET": offsets[i][k]},
                         [ctx.input(_FIXED_INPUTS + 2 * i + k)], [meta], (n,), Work.ELEMENTS)
    status = ctx.status("the sparse metadata contradict themselves (array segments, indices or their lengths)")
    ctx.emit("densify.cl", {**d, "MODE": 1}, [meta], [status], (1,))
    ctx.emit("densify.cl", {**d, "STATUS": 1}, [ctx.input(0), meta], [ctx.output(0), status], (count,),
             Work.ELEMENTS)


@operation(OperationType.DENSIFY, signature=SIGNATURE, reference=reference_densify,
           lower=lower_densify, supports=supports_densify, value_inputs=(1, 2, 3, 4))
def define_densify(inputs: list[TensorInfo], outputs: list[TensorInfo]) -> DensifyParams:
    name = "DENSIFY"
    values, out = inputs[0], outputs[0]
    same_quant_as_input(values, out, name)
    order = int_values(inputs[1], name, "the traversal order")
    require(len(inputs) == _FIXED_INPUTS + 2 * len(order), name,
            f"{len(inputs)} inputs for a traversal order of {len(order)} levels: expected "
            f"{_FIXED_INPUTS + 2 * len(order)}")
    block_map = int_values(inputs[2], name, "the block map") if _known_present(inputs[2]) else []
    formats = int_values(inputs[3], name, "the dimension formats", (len(order),))
    sizes = int_values(inputs[4], name, "the dimension sizes", (len(order),))
    try:
        shape = dense_shape(order, block_map, sizes)
    except SparseFormatError as err:
        raise invalid(f"{name}: {err}") from None
    require(element_count(shape) * values.dtype.itemsize <= UINT32_MAX, name,
            f"the dense shape {list(shape)} exceeds 2^32 − 1 bytes")
    for i, fmt in enumerate(formats):
        require(fmt in (DENSE, SPARSE_CSR), name, f"level {i} has format {fmt}, expected 0 (DENSE) or 1 (SPARSE_CSR)")
        pair = inputs[_FIXED_INPUTS + 2 * i:_FIXED_INPUTS + 2 * i + 2]
        given = [_known_present(p) for p in pair]
        if fmt == DENSE:
            require(not any(given), name, f"level {i} is DENSE: its array segments and indices (inputs "
                                          f"{_FIXED_INPUTS + 2 * i}, {_FIXED_INPUTS + 2 * i + 1}) must be NO_VALUE")
        else:
            require(all(given), name, f"level {i} is SPARSE_CSR: its array segments and indices (inputs "
                                      f"{_FIXED_INPUTS + 2 * i}, {_FIXED_INPUTS + 2 * i + 1}) must be given")
    params = DensifyParams([shape], tuple(order), tuple(block_map), tuple(formats), tuple(sizes))
    # the sparse metadata and the number of values, where they are known already
    try:
        count = stored_count(_levels(params, inputs))
    except ShapeUnknown:
        return params
    except SparseFormatError as err:
        raise invalid(f"{name}: {err}") from None
    if values.shape is not None and values.known_shape:
        require(values.shape == (count,), name, f"input 0 holds {list(values.shape)} values, the metadata "
                                                f"store {count}")
    return params
