"""Published reference figures (Azure HB/HC, Charmed HPC, Azure NetApp Files) and the user's own.

``load(name)`` returns a ``ReferenceSet``; ``available()`` lists them. The data model is in
``assay.references.model``, the file format in ``assay.references.schema``.
"""

from assay.references.loader import ReferenceError, available, load, load_file, user_dir
from assay.references.model import ReferenceSet, RefPoint, Tolerance

__all__ = [
    "RefPoint",
    "ReferenceError",
    "ReferenceSet",
    "Tolerance",
    "available",
    "load",
    "load_file",
    "user_dir",
]
