"""Per-operation lowerings: importing this package imports every module in it (each registers its
lowerings in compiler.lowering.LOWERINGS), so a new file here registers itself.  Modules whose name
starts with "_" are helpers; ``elementwise_bootstrap`` is imported last and only fills gaps."""
import importlib
import pkgutil

_LAST = "elementwise_bootstrap"
_names = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
for _name in [n for n in _names if n != _LAST] + [n for n in _names if n == _LAST]:
    importlib.import_module(f"{__name__}.{_name}")
