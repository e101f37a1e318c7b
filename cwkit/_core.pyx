# cython: language_level=3
"""cwkit's compiled core: one pass over given rows, state updated in place.

The kernels live in include files grouped by the shape of their state; this
module only stitches them together so that cwkit has exactly one extension.
No validation, randomness, I/O or Python objects inside the per-example loops:
the Python layer validates, allocates and turns status codes into exceptions.
"""
include "_status.pxi"
include "_rows.pxi"
include "_driver.pxi"
include "_qp.pxi"
include "_binary.pxi"
include "_full.pxi"
include "_minibatch.pxi"
include "_l1pa.pxi"
include "_mc_rows.pxi"
include "_mc_first_order.pxi"
include "_mc_diag.pxi"
include "_mc_full.pxi"
include "_mc_topk.pxi"
include "_mc_minibatch.pxi"
include "_mc_l1pa.pxi"
include "_svmlight.pxi"
