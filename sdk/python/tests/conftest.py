"""Puts the package and its generated stubs on sys.path: JOBWHEEL_PY_STUBS names a directory
that gen_stubs.py filled (the check script sets it); without it the stubs are generated into a
temporary directory for this session."""

from __future__ import annotations

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)

stubs = os.environ.get("JOBWHEEL_PY_STUBS")
if not stubs:
    sys.path.insert(0, PKG_ROOT)
    import gen_stubs  # noqa: E402

    stubs = tempfile.mkdtemp(prefix="jobwheel-pystubs-")
    gen_stubs.generate(stubs)
for p in (PKG_ROOT, stubs):
    if p not in sys.path:
        sys.path.insert(0, p)
