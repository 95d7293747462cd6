"""Expand the AOSP NNAPI test specs into conformance cases (data), one JSON file per spec version.

Needs a checkout of the AOSP NeuralNetworks module (CI has none: the expanded cases it uses are
committed as data under tests/conformance/cases/).  The spec files (``runtime/test/specs/*/*.mod.py``)
are executed by AOSP's own test generator (``tools/test_generator/test_generator.py``), with every
variation it defines (data types, layouts, axes, relaxed mode, activations, lifetimes); each
resulting example becomes one case::

    {"name", "spec", "version", "relaxed", "expect_failure", "main": SUBGRAPH, "referenced": [SUBGRAPH]}
    SUBGRAPH = {"operands": [{"type", "dims", "scale", "zp", "lifetime", "channel_quant", "ignored",
                              "data"}], "operations": [[type name, inputs, outputs]],
                "inputs": [...], "outputs": [...]}

Usage: python tests/conformance/expand_aosp_specs.py AOSP_ROOT OUT_DIR [--only SUBSTRING]
"""
from __future__ import annotations

import argparse
import gzip
import io
import json
import math
import os
import sys


def _value(v):
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    return v


def _subgraph(tg, model) -> dict:
    operands = []
    for op in model.operands:
        extra = op.type.extraParams
        operands.append({
            "type": op.type.type,
            "dims": list(op.type.dimensions),
            "scale": op.type.scale,
            "zp": op.type.zeroPoint,
            "lifetime": op.lifetime,
            "channel_quant": None if extra is None or extra.hide else
            {"scales": list(extra.scales), "dim": extra.channelDim},
            "ignored": isinstance(op, tg.IgnoredOutput),
            "data": None if op.value is None else [_value(x) for x in op.value],
        })
    return {
        "operands": operands,
        "operations": [[o.optype, [i.model_index for i in o.ins], [i.model_index for i in o.outs]]
                       for o in model.operations],
        "inputs": [o.model_index for o in model.GetInputs()],
        "outputs": [o.model_index for o in model.GetOutputs()],
    }


def expand(aosp_root: str, out_dir: str, only: str | None = None) -> None:
    sys.path.insert(0, os.path.join(aosp_root, "tools", "test_generator"))
    import test_generator as tg  # noqa: E402  (AOSP's generator, from the checkout)

    specs_root = os.path.join(aosp_root, "runtime", "test", "specs")
    os.makedirs(out_dir, exist_ok=True)
    for version in sorted(os.listdir(specs_root)):
        folder = os.path.join(specs_root, version)
        if not os.path.isdir(folder):
            continue
        cases = []

        def dump(example, example_fd, _cases=cases):
            model = example.model
            _cases.append({
                "name": str(example.testName),
                "spec": tg.FileNames.specName,
                "version": version,
                "min_version": model.version,
                "relaxed": bool(model.isRelaxed),
                "expect_failure": bool(example.expectFailure),
                "multinomial_tolerance": example.expectedMultinomialDistributionTolerance,
                "main": _subgraph(tg, model),
                "referenced": [_subgraph(tg, m) for m in model.GetReferencedModels()],
            })

        tg.FileNames.InitializeFileLists(folder, None)
        tg.FileNames.fileIndex = 0
        scope = tg.GetExecScope()
        while tg.FileNames.NextFile():
            if only and only not in tg.FileNames.specName:
                continue
            try:
                exec(compile(open(tg.FileNames.specFile).read(), tg.FileNames.specFile, "exec"), scope)
                tg.Example.DumpAllExamples(DumpExample=dump, example_fd=io.StringIO())
            except Exception as exc:  # a spec the generator cannot expand: report, go on
                print(f"{tg.FileNames.specFile}: {type(exc).__name__}: {exc}", file=sys.stderr)
        path = os.path.join(out_dir, f"{version}.json.gz")
        with gzip.open(path, "wt") as f:
            json.dump(cases, f, separators=(",", ":"))
        print(f"{version}: {len(cases)} cases -> {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("aosp_root")
    parser.add_argument("out_dir")
    parser.add_argument("--only", help="expand only specs whose name contains this")
    args = parser.parse_args()
    expand(args.aosp_root, args.out_dir, args.only)


if __name__ == "__main__":
    main()
