"""The typing names rlock uses that the standard library has only from Python 3.12 on.

PEP 692's ``Unpack`` types ``**options`` by a ``TypedDict``, and the ``TypedDict`` that goes with
it is ``typing``'s from 3.12. Before that both come from ``typing_extensions``, which the package
requires only on those versions (pyproject.toml), so a 3.12 or newer install has no dependency.
"""

import sys

if sys.version_info >= (3, 12):
    from typing import TypedDict, Unpack
else:
    from typing_extensions import TypedDict, Unpack

__all__ = ["TypedDict", "Unpack"]
