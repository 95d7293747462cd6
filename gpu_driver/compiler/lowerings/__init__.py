"""Per-operation lowerings: importing this package imports every module in it (each registers its
lowerings in compiler.lowering.LOWERINGS), so a new file here registers itself.  Modules whose name
starts with "_" are helpers."""
import importlib
import pkgutil

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")):
    importlib.import_module(f"{__name__}.{_module}")
