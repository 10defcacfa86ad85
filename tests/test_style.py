"""Every flowkit module class is abstract (named Abstract*) or final (never subclassed)."""

import inspect

import equinox as eqx

import flowkit as fk


def _module_classes():
    seen, stack = set(), [eqx.Module]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in seen:
                seen.add(sub)
                stack.append(sub)
    return [c for c in seen if c.__module__.startswith("flowkit")]


def test_abstract_or_final():
    classes = _module_classes()
    assert fk.RK4 in classes and fk.GridField in classes
    for cls in classes:
        subclassed = any(issubclass(other, cls) and other is not cls for other in classes)
        if subclassed:
            assert cls.__name__.startswith("Abstract"), f"{cls.__name__} is subclassed, so it must be an Abstract* class"
        else:
            assert not inspect.isabstract(cls), f"{cls.__name__} is final but leaves abstract members unimplemented"
