# The one status enum of the core, shared with Python as `cwkit._core.Status`: every
# driver returns one of these with the position of the row it stopped at, and
# Hildreth's method (_qp.pxi) reports its outcome in the same terms.

cpdef enum Status:
    OK = 0
    NONFINITE_INPUT = 1     # m, v or ||x||^2 of a row is not finite
    NONFINITE_STATE = 2     # the update would overflow the state; state restored
    INFEASIBLE = 3          # l2-pa / l1-pa: no weight vector satisfies the constraints
    # a per-example or per-group dual QP stopped short of its tolerance (state
    # restored); for Hildreth's method: the iteration limit was reached
    QP_NOT_CONVERGED = 4
    QP_UNBOUNDED = 5        # Hildreth: the objective is unbounded along a coordinate
    # a row of a view not checked before the pass (`RowView.unchecked`) is not valid:
    # the pass stopped before it; the caller undoes the pass and checks the input
    ROW_UNCHECKED = 6
