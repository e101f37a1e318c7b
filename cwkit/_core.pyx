# cython: language_level=3
"""cwkit's compiled core: one pass over given rows, state updated in place.

The kernels live in include files grouped by the shape of their state and the
way of training; this module only stitches them together so that cwkit has
exactly one extension.  No validation, randomness, I/O or Python objects inside
the per-example loops: the Python layer validates, allocates and turns status
codes into exceptions.

Every include opens with what it provides and what it uses from which other
include.  The pieces every driver shares are declared once: the row view and
the prefetch cursor (_rows.pxi), the counters, the one way a pass stops, the
workspace, the scaled weight vector and the covariance step (_driver.pxi).  A
driver is the loop specific to it; the rule's step is a parameter (`Hyper`).
A new state shape or way of training is one new include, listed below after
the includes it uses.
"""
include "_status.pxi"
include "_rows.pxi"
include "_driver.pxi"
include "_qp.pxi"
include "_binary.pxi"
include "_full.pxi"
include "_gram.pxi"
include "_minibatch.pxi"
include "_l1pa.pxi"
include "_mc_rows.pxi"
include "_mc_first_order.pxi"
include "_mc_diag.pxi"
include "_mc_full.pxi"
include "_mc_topk.pxi"
include "_mc_minibatch.pxi"
include "_mc_l1pa.pxi"
include "_tri.pxi"
include "_kernel.pxi"
include "_svmlight.pxi"
include "_vocab.pxi"
include "_hash.pxi"
include "_lock.pxi"
include "_growth.pxi"
include "_named.pxi"
include "_onerow.pxi"
include "_vw.pxi"
