# The river protocol's one-row path: a whole round of `learn_one`, or the score of
# `predict_one` (the probabilities of `predict_proba_one`), on a fitted first-order
# or diagonal model of hashed names or of a vocabulary, in one compiled call.
#
# Provides: `NamedOne` (the path of one estimator: its model's state read through
# pointers, the checks that it is still the estimator's current state, the row
# hashed, or looked up in a vocabulary (which grows, the model with it), into its
# own buffers, the round run by the driver `partial_fit` runs, the counters and the
# calibration window written; `round`, the round after its checks, which
# `_onerow.pxi` runs on a CSR row); `learn_one`, `predict_one`,
# `predict_proba_one`, the estimators' methods of those names (bound by
# cwkit.named.NamedFeatures): the estimator's `NamedOne` called without a Python
# frame, its `_learn_one`, `_predict_one`, `_predict_proba_one` otherwise.
# Uses: `_hashed_key`, `_exact_dict`, `_dict_objects`, `_vocab_dict`, `_one_value`,
# `_one_name`, `_is_names`, `_canonical`, NAMED_OK, cwkit_exact_str, cwkit_exact_float,
# cwkit_ascii_str (_hash.pxi); `NameTable` (_vocab.pxi); `widen_dict` (_growth.pxi);
# Rows, CWKIT_PREFETCH (_rows.pxi); Counts, Hyper, the AUX_* slots, hyper_first_order,
# hyper_second_order, first_order_rows, diag_rows (_binary.pxi, _driver.pxi);
# mc_first_order_rows, mc_diag_rows, argmax_first (_mc_first_order.pxi, _mc_diag.pxi,
# _driver.pxi); Status (_status.pxi).

from libc.string cimport memset, memcpy
from cpython.object cimport PyObject_GenericGetDict
from cpython.dict cimport PyDict_GetItemWithError
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.long cimport PyLong_AsLongLongAndOverflow
cimport numpy as cnp

# `NamedOne`'s state shapes (also `cwkit._core.ONE_*`): cwkit.models.binary's
# FirstOrder and Diagonal, cwkit.models.multiclass's FirstOrder and Diagonal.
cpdef enum:
    ONE_FIRST_ORDER = 0
    ONE_DIAGONAL = 1
    ONE_MC_FIRST_ORDER = 2
    ONE_MC_DIAGONAL = 3


cdef extern from *:
    """
    /* The version of the dict d (PEP 509: globally unique, a new value at every
       change of d; the field is deprecated since 3.12); 0 (unknown: never the same)
       from 3.13 on, where an attribute stored into an object's inline values changes
       the object's __dict__ without a new version (seen: the calibration's slopes). */
    static inline uint64_t cwkit_dict_version(PyObject* d) {
    #if PY_VERSION_HEX < 0x030D0000
    #if defined(__GNUC__)
    #pragma GCC diagnostic push
    #pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    #endif
        return ((PyDictObject*)d)->ma_version_tag;
    #if defined(__GNUC__)
    #pragma GCC diagnostic pop
    #endif
    #else
        (void)d;
        return 0;
    #endif
    }
    """
    uint64_t cwkit_dict_version(PyObject* d) noexcept


cdef cnp.PyUFuncGenericFunction _np_exp, _np_log, _np_add
cdef void* _np_exp_data
cdef void* _np_log_data
cdef void* _np_add_data


cdef int _numpy_loop(ufunc, str types, cnp.PyUFuncGenericFunction* f,
                     void** data) except -1:
    """numpy's float64 loop of `ufunc` (its first of `types`, "d->d" or "dd->d", the
    one numpy runs on float64 arrays), so that a probability computed here is
    numpy's, bit for bit."""
    cdef cnp.ufunc u = ufunc
    cdef int i
    for i in range(u.ntypes):
        if ufunc.types[i] == types:
            f[0] = u.functions[i]
            data[0] = u.data[i]
            return 0
    raise RuntimeError(f"numpy's {ufunc.__name__} has no float64 loop")


_numpy_loop(np.exp, "d->d", &_np_exp, &_np_exp_data)
_numpy_loop(np.log, "d->d", &_np_log, &_np_log_data)
_numpy_loop(np.add, "dd->d", &_np_add, &_np_add_data)

#: The most classes whose probabilities `_softmax` computes: numpy before 2.3 sums
#: a reduction's row in blocks of its buffer size (8192 values by default), each
#: block pairwise; up to this, the whole row is one block, in every version.
cdef Py_ssize_t _SOFTMAX_MAX = 8192


cdef void _numpy_run(cnp.PyUFuncGenericFunction f, void* data, const double* x,
                     double* out, cnp.npy_intp n) noexcept:
    """numpy's loop `f` (`_numpy_loop`, "d->d") on the n contiguous values x, into
    out (n values elsewhere), in one call as numpy calls it on an array of them."""
    cdef char* args[2]
    cdef cnp.npy_intp steps[2]
    args[0] = <char*>x
    args[1] = <char*>out
    steps[0] = steps[1] = sizeof(double)
    f(args, &n, steps, data)


cdef double _numpy_call(cnp.PyUFuncGenericFunction f, void* data, double x) noexcept:
    """numpy's loop `f` (`_numpy_loop`) on the one value x."""
    cdef double out
    _numpy_run(f, data, &x, &out, 1)
    return out


cdef double _numpy_sum(const double* x, cnp.npy_intp n) noexcept:
    """numpy's sum of the n contiguous values x, ``np.sum`` of their row: its add
    loop called as a reduction calls it (the sum in its first operand and output,
    both of step 0), which sums them pairwise (blocks of up to 128 values, each
    over 8 running sums)."""
    cdef double s = 0.0         # (add's identity: a reduction's first value)
    cdef char* args[3]
    cdef cnp.npy_intp steps[3]
    args[0] = args[2] = <char*>&s
    args[1] = <char*>x
    steps[0] = steps[2] = 0
    steps[1] = sizeof(double)
    _np_add(args, &n, steps, _np_add_data)
    return s


cdef double* _softmax(const double* S, Py_ssize_t K, double a, double* w) noexcept:
    """``Calibration.proba``'s row of the K class scores S with the slope a,
    ``exp(log_softmax(a S))`` as scipy and numpy compute it, bit for bit: x = a S,
    its max m (0 where not finite), t = x - m, the log of the sum of exp(t) (numpy's
    exp loop, sum and log loop), then exp(t - that log); w (3 K values) the
    scratch, the probabilities its last K values (returned)."""
    cdef double* t = w
    cdef double* e = w + K
    cdef double m, lse
    cdef Py_ssize_t c
    for c in range(K):
        t[c] = a * S[c]
    m = t[0]
    for c in range(1, K):
        if t[c] > m:
            m = t[c]
    if not isfinite(m):
        m = 0.0
    for c in range(K):
        t[c] = t[c] - m
    _numpy_run(_np_exp, _np_exp_data, t, e, K)
    lse = _numpy_call(_np_log, _np_log_data, _numpy_sum(e, K))
    for c in range(K):
        e[c] = t[c] - lse
    _numpy_run(_np_exp, _np_exp_data, e, w + 2 * K, K)
    return w + 2 * K


cdef object _TRUE = True, _FALSE = False     # (compared by address: the objects)


cdef inline PyObject* _get(dict d, str key) except NULL:
    """``d.get(key)`` as a borrowed reference (None's where key is absent)."""
    cdef PyObject* p = PyDict_GetItemWithError(d, key)
    return p if p != NULL else <PyObject*>None


cdef inline bint _small(object v, long long* out) except -1:
    """Whether v is an int in (-2**62, 2**62) (its value in out): one a C sum of
    another such number keeps exact."""
    cdef int overflow = 0
    if type(v) is not int:
        return False
    out[0] = PyLong_AsLongLongAndOverflow(v, &overflow)
    return overflow == 0 and -(1LL << 62) < out[0] < (1LL << 62)


cdef inline bint _add(dict d, str key, long long n, long long* c) except -1:
    """``d[key] += n`` (n small), as Python adds (nothing written for n = 0):
    whether the sum is an int of `_small`'s range, then its value in c."""
    cdef object v = <object>_get(d, key)
    cdef bint small = _small(v, c)
    if small:
        c[0] += n
    if n != 0:
        d[key] = c[0] if small else v + n
    return small


cdef inline int _bump(dict d, str key, long long n, long long* c) except -1:
    """``d[key] += n`` where d[key] is known to be the int c (`NamedOne.unchanged`)."""
    if n != 0:
        c[0] += n
        d[key] = c[0]
    return 0


cdef inline int _set_count(dict d, str key, long long n) except -1:
    """``d[key] = n`` (n a count of one round: 0 or 1, Python's cached ints, kept
    where d holds that one already)."""
    cdef object v = n
    if _get(d, key) != <PyObject*>v:
        d[key] = v
    return 0


# `NamedOne.count`'s counters
cdef enum:
    C_T = 0
    C_MISTAKES = 1
    C_UPDATES = 2
    C_LAST_MISTAKES = 3
    C_LAST_UPDATES = 4
    C_SEEN = 5          # the calibration window's rounds
    N_COUNTS = 6


cdef inline object _attr(est, dict d, str name):
    """The attribute `name` of `est` (whose __dict__ is `d`): from d where it is."""
    cdef PyObject* p = _get(d, name)
    return <object>p if p != <PyObject*>None else getattr(est, name)


cdef double* _state_values(a, int ndim, Py_ssize_t* shape) except? NULL:
    """The values of the state array `a`, a writable C-contiguous float64 array of
    `ndim` axes (as a typed memoryview takes it), its shape in `shape`; NULL for an
    empty one."""
    if not (isinstance(a, cnp.ndarray) and cnp.PyArray_NDIM(<cnp.ndarray>a) == ndim
            and cnp.PyArray_TYPE(<cnp.ndarray>a) == cnp.NPY_DOUBLE
            and cnp.PyArray_ISCARRAY(<cnp.ndarray>a)
            and cnp.PyArray_ISNOTSWAPPED(<cnp.ndarray>a)):
        raise ValueError(f"a model's state array is not a writable C-contiguous float64 "
                         f"array of {ndim} axes")
    shape[0] = cnp.PyArray_DIM(<cnp.ndarray>a, 0)
    if ndim == 2:
        shape[1] = cnp.PyArray_DIM(<cnp.ndarray>a, 1)
    return (<double*>cnp.PyArray_DATA(<cnp.ndarray>a)
            if cnp.PyArray_SIZE(<cnp.ndarray>a) > 0 else NULL)


cdef class NamedOne:
    """The one-row path of an estimator whose model is a two-class, multi-class
    (top-1 or one-vs-rest) or regression `FirstOrder` or `Diagonal` model of
    ``2**bits`` hashed columns or of a vocabulary's columns (``cwkit.named``; a
    regressor's `classes` and `cal` are None); built without `fmap` (None), the
    path of ``partial_fit``'s single CSR rows of a two-class model alone
    (`_onerow.pxi`), which a path of named rows also takes.

    Built from the estimator's current model, classes, calibration window and
    feature hasher; every call first checks, under the estimator's lock, that
    they are still the estimator's (the same objects, the same state arrays), and
    returns "not taken" (0 or None, having done nothing) otherwise, or for any row
    or label it does not take: the caller then takes the general path, which
    rebuilds the path or reports what is wrong.  `learn` is ``partial_fit``'s
    round on the row's CSR matrix, bit for bit: the same driver loop
    (`first_order_rows`, `diag_rows`, `mc_first_order_rows`, `mc_diag_rows`), the
    same counters and calibration round; `score` is ``decision_function``'s score
    of the row, bit for bit: each weight (its mean over the rounds when averaging)
    computed from its own feature's state as ``weights()`` computes it, summed as
    ``row_scores`` / ``mc_row_scores`` sum; `proba` is ``predict_proba``'s row,
    bit for bit: the calibration's softmax of those scores through numpy's own
    loops (`_softmax`).
    """
    cdef object model, spec, classes, cal, fmap
    cdef dict state             # the model's state, as the model held it
    cdef dict model_dict, cal_dict  # the model's and the calibration's __dict__
    cdef dict fmap_dict         # the feature map's __dict__
    cdef NameTable vocab        # a vocabulary's names and columns (None: hashed names)
    cdef object n_in            # the estimator's n_features_in_ (as the model's width)
    cdef StateLock lock         # the estimator's lock
    cdef tuple array_keys, arrays   # the state's arrays and their keys (None: absent)
    cdef dict codes             # label -> its index in classes_
    cdef tuple labels           # classes_'s items (numpy scalars), a multi-class model's
    cdef frozenset label_types  # the label types taken (as scalars)
    cdef readonly object negative, positive     # classes_[0], classes_[1]
    cdef tuple class_keys       # classes_'s items as Python objects (predict_proba_one's)
    cdef int shape
    cdef Py_ssize_t K           # a multi-class model's classes (0: two, or a regressor)
    cdef bint ovr, sum_update   # a multi-class model's strategy, its covariance update
    cdef Py_ssize_t na          # a multi-class first-order model's aux: values per row
    cdef Py_ssize_t stride      # a column's values in w
    cdef Hyper h
    cdef bint hashes            # whether `fmap` hashes names (a FeatureHasher's path)
    cdef int bits
    cdef bint signed
    cdef uint64_t mask
    cdef Py_ssize_t D           # features + 1 (the intercept last)
    cdef double* w              # v (first-order), the (mu, sigma) pairs (diagonal), V or mu
    cdef double* sg             # a multi-class diagonal model's sigma (D, K), else NULL
    cdef double* aux            # first-order: the scale, norm, rounds (and sum of scales)
    cdef bint keep_sum
    cdef double* up             # the lazy sum of averaging, NULL without
    cdef double eps
    cdef double* cal_s          # the calibration window's scores and labels
    cdef Py_ssize_t* cal_l
    cdef Py_ssize_t window
    cdef object slopes_of       # the calibration's slopes array last read (held), and
    cdef const double* slopes_p     # its values
    cdef double[::1] y_neg, y_pos   # the target of the row: -1, +1
    cdef double[::1] y_real         # a regressor's target
    cdef Py_ssize_t[::1] order1     # the one row
    cdef Py_ssize_t code[1]         # its class (multi-class)
    cdef void* buf              # the row's entries and the driver's scratch
    cdef PyObject** objs        # a dict row's names and values (borrowed)
    cdef Py_ssize_t cap
    cdef unsigned long long* keys
    cdef double* vals
    cdef double* data
    cdef int* idx
    cdef double* save
    cdef int* ahead
    cdef double* out            # the row's scores (K, or 1), then a multi-class
    cdef Py_ssize_t* act        # driver's scratch and its classes (`room`)
    cdef long long ptr[2]
    # What `noted` saw (`unchanged`): the estimator's __dict__ (NULL: nothing), the
    # versions of it, of the model's __dict__, of the state, of the calibration's
    # __dict__ and of the feature map's, whether of a learning round (then the
    # counters in `count` too), the intercept's value; `plain`: `current` found all it
    # read in those dicts.
    cdef PyObject* seen_d
    cdef uint64_t seen[5]
    cdef bint seen_learning, plain
    cdef double x0
    cdef long long count[N_COUNTS]

    def __init__(self, int shape, model, fmap, classes, cal, frozenset label_types):
        cdef double[::1] flat
        cdef Py_ssize_t[::1] labels
        spec = model.spec
        self.model, self.state, self.spec, self.fmap = model, model.state, spec, fmap
        self.model_dict = model.__dict__
        self.fmap_dict = fmap.__dict__ if fmap is not None else {}
        self.classes, self.cal = classes, cal
        self.shape = shape
        self.hashes = getattr(fmap, "hash_bits", None) is not None
        if getattr(fmap, "_table", None) is not None:    # (a Vocabulary: columns by name)
            self.vocab = fmap._table
        elif self.hashes:
            self.bits = fmap.hash_bits
            self.signed = fmap.signed
            self.mask = (<uint64_t>1 << self.bits) - 1
        self.label_types = label_types
        if classes is not None:
            # (classes[len - 1]: the core is compiled without negative indices)
            self.negative, self.positive = classes[0], classes[len(classes) - 1]
            self.codes = {c: i for i, c in enumerate(classes.tolist())}
            self.labels = tuple(classes)
            self.class_keys = tuple(classes.tolist())
        self.eps = spec.epsilon
        if shape == ONE_FIRST_ORDER or shape == ONE_MC_FIRST_ORDER:
            self.h = hyper_first_order(spec.rule, spec.C, spec.alpha, spec.beta)
        else:
            self.h = hyper_second_order(spec.rule, spec.phi, spec.r, spec.direct)
            self.h.C = spec.C
        self.h.task = spec.task_code
        if shape == ONE_MC_FIRST_ORDER or shape == ONE_MC_DIAGONAL:
            self.ovr, self.sum_update = model.ovr, model.sum_update
        self.array_keys = {ONE_FIRST_ORDER: ("by_feature", "aux"),
                           ONE_DIAGONAL: ("by_feature",),
                           ONE_MC_FIRST_ORDER: ("by_feature", "aux"),
                           ONE_MC_DIAGONAL: ("by_feature",)}[shape]
        self.read_state()
        if cal is not None:
            self.cal_dict = cal.__dict__
            flat = cal.scores.reshape(-1)       # (a view: (window,) or (window, K))
            labels = cal.labels
            self.cal_s = &flat[0]
            self.cal_l = &labels[0]
            self.window = labels.shape[0]
        self.y_neg = np.array([-1.0])
        self.y_pos = np.array([1.0])
        self.order1 = np.zeros(1, dtype=np.intp)
        self.y_real = np.zeros(1)

    cdef int read_state(self) except -1:
        """The model's state arrays (`state`): their addresses and widths (on
        construction, and after the model grew)."""
        cdef dict st = self.state
        cdef Py_ssize_t n[2]
        self.up = NULL
        if self.shape == ONE_FIRST_ORDER:
            # one array: a feature's v (and lazy sum) in a row (`binary.FirstOrder`)
            self.w = _state_values(st["by_feature"], 2, n)
            self.D = n[0]
            self.stride = n[1]
            self.up = self.w + 1 if self.stride > 1 else NULL
            self.aux = _state_values(st["aux"], 1, n)
            self.keep_sum = n[0] > AUX_SSUM
        elif self.shape == ONE_DIAGONAL:
            # one array: a feature's mean, variance (and lazy sum) in a row, then
            # (averaging) the round count's row (`binary.Diagonal`)
            self.w = _state_values(st["by_feature"], 2, n)
            self.D = n[0] - (1 if self.spec.average else 0)
            self.stride = n[1]
            self.up = self.w + 2 if self.spec.average else NULL
        else:
            if self.shape == ONE_MC_FIRST_ORDER:
                # one array: a feature's K entries of v (and K of the lazy sum) in a
                # row (`multiclass.FirstOrder`)
                self.aux = _state_values(st["aux"], 2, n)
                self.na = n[1]
                self.keep_sum = self.na > AUX_SSUM
                self.w = _state_values(st["by_feature"], 2, n)
                self.K = self.model.K
                self.D = n[0]
                self.stride = n[1]
                self.up = self.w + self.K if self.stride > self.K else NULL
            else:
                # diagonal: one array, a feature's K means, K variances (and K sums) in
                # a row, then (averaging) the round counts' row (`multiclass.Diagonal`)
                self.w = _state_values(st["by_feature"], 2, n)
                self.K = self.model.K
                self.D = n[0] - (1 if self.spec.average else 0)
                self.stride = n[1]
                self.sg = self.w + self.K
                self.up = self.w + 2 * self.K if self.spec.average else NULL
        self.arrays = self.state_arrays()
        self.room(0)
        return 0

    def __dealloc__(self):
        free(self.buf)

    cdef bint current(self, est, dict d, bint learning) except -1:
        """Whether this path is still that of `est` (its __dict__ `d`): the same
        model, spec, state arrays, classes, calibration window and feature map (a
        vocabulary's table), the model's width the estimator's;
        when `learning`, without class weights.  (Each is
        looked up in its own __dict__, the same objects compared.)"""
        cdef Py_ssize_t k
        cdef PyObject* p
        if (_get(d, "_model") != <PyObject*>self.model
                or _get(self.model_dict, "spec") != <PyObject*>self.spec
                or _get(self.model_dict, "state") != <PyObject*>self.state
                or _get(d, "classes_") != <PyObject*>self.classes
                or _get(d, "feature_map_") != <PyObject*>self.fmap
                or _get(d, "_calibration") != <PyObject*>self.cal
                or (self.vocab is not None
                    and _get(self.fmap_dict, "_table") != <PyObject*>self.vocab)):
            return False
        p = _get(d, "n_features_in_")
        if p != <PyObject*>self.n_in:
            if not <object>p == self.D - 1:
                return False
            self.n_in = <object>p       # (the same number: compared by identity next)
        for k in range(len(self.arrays)):
            if _get(self.state, self.array_keys[k]) != <PyObject*>self.arrays[k]:
                return False
        if learning and _attr(est, d, "class_weight") is not None:
            return False
        self.x0 = self.bias(est, d)
        # (a regressor's class_weight is its class's None: it takes no class weights)
        self.plain = ((self.classes is None
                       or PyDict_GetItemWithError(d, "class_weight") != NULL)
                      and PyDict_GetItemWithError(d, "fit_intercept") != NULL)
        return True

    cdef inline bint unchanged(self, dict d, bint learning) noexcept:
        """Whether nothing this path reads has changed since `noted`: `d`, the
        model's __dict__, its state, the calibration's and the feature map's
        __dict__ are at the versions it noted (of a learning round where
        `learning`), so that `current` holds, `x0` is the intercept's value and
        `count` the counters."""
        return (self.seen_d == <PyObject*>d and (self.seen_learning or not learning)
                and cwkit_dict_version(<PyObject*>d) == self.seen[0]
                and cwkit_dict_version(<PyObject*>self.model_dict) == self.seen[1]
                and cwkit_dict_version(<PyObject*>self.state) == self.seen[2]
                and (self.cal_dict is None
                     or cwkit_dict_version(<PyObject*>self.cal_dict) == self.seen[3])
                and cwkit_dict_version(<PyObject*>self.fmap_dict) == self.seen[4])

    cdef inline void noted(self, dict d, bint learning) noexcept:
        """Note the versions `unchanged` compares (nothing where `current` read an
        attribute outside those dicts, or where Python keeps no versions)."""
        cdef uint64_t v = cwkit_dict_version(<PyObject*>d)
        self.seen_d = <PyObject*>d if self.plain and v != 0 else NULL
        self.seen[0] = v
        self.seen[1] = cwkit_dict_version(<PyObject*>self.model_dict)
        self.seen[2] = cwkit_dict_version(<PyObject*>self.state)
        self.seen[3] = (cwkit_dict_version(<PyObject*>self.cal_dict)
                        if self.cal_dict is not None else 0)
        self.seen[4] = cwkit_dict_version(<PyObject*>self.fmap_dict)
        self.seen_learning = learning

    def is_current(self, est):
        """Whether this path is still that of `est` (the caller holds its lock)."""
        return self.current(est, est.__dict__, False)

    cdef int room(self, Py_ssize_t n) except -1:
        """Buffers for a row of n names (and the driver's scratch)."""
        cdef Py_ssize_t cap = max(n, 2 * self.cap, 32), K = self.K
        # the scores (K, or 1) and a multi-class driver's scratch (`mc_first_order_rows`:
        # 5 K + (K or 2) (cap + 1); `mc_diag_rows`: 4 K + (2 K or 4) (cap + 1))
        cdef Py_ssize_t n_out = 6 * K + max(2 * K, 4) * (cap + 1) if K else 1
        cdef void* p
        if n <= self.cap and self.buf != NULL:
            return 0
        # keys (2 cap), values, data, save (4 (cap + 1)), out, objects (2 cap), act (K),
        # indices, ahead (cap + 1)
        p = malloc((2 * cap) * sizeof(unsigned long long)
                   + (6 * cap + 4 + n_out) * sizeof(double)
                   + (2 * cap) * sizeof(PyObject*) + K * sizeof(Py_ssize_t)
                   + (2 * cap + 1) * sizeof(int))
        if p == NULL:
            raise MemoryError()
        free(self.buf)
        self.buf = p
        self.cap = cap
        self.keys = <unsigned long long*>p
        self.vals = <double*>(self.keys + 2 * cap)
        self.data = self.vals + cap
        self.save = self.data + cap
        self.out = self.save + 4 * (cap + 1)
        self.objs = <PyObject**>(self.out + n_out)
        self.act = <Py_ssize_t*>(self.objs + 2 * cap)
        self.idx = <int*>(self.act + K)
        self.ahead = self.idx + cap
        return 0

    cdef Py_ssize_t hashed(self, row, bint grow) except -2:
        """Hash the named row into `data`, `idx` (canonical: sorted, repeated columns
        summed, as `_named_rows`); its entries, or -1 for a row `_named_rows` would
        refuse (whose call reports it).  With a vocabulary, its columns there
        (`looked_up`: new names appended where `grow`, else left out).

        A dict of str names and float values is read by `_exact_dict`, then the
        state of each entry's column prefetched (`fetch`); any other row, or any
        other name or value type, is read entry by entry (`entries`)."""
        cdef Py_ssize_t n, k
        if self.vocab is not None:
            return self.looked_up(row, grow)
        if not self.hashes:     # (the path of CSR rows, `_onerow.pxi`)
            return -1
        if type(row) is not dict:
            return self.entries(row)
        self.room(len(row))
        n = _exact_dict(row, self.objs, self.keys, self.vals, self.cap, self.signed,
                        self.mask)
        if n < 0:
            return self.entries(row)
        for k in range(n):
            self.fetch(self.keys[k] >> 32)
        return self.canonical(n)

    cdef inline void fetch(self, Py_ssize_t j) noexcept:
        """Prefetch the state of column j (its weight, or mean and variance, and its
        lazy sum), which the round reads after the row's other names are hashed."""
        CWKIT_PREFETCH(self.w + j * self.stride)
        if self.sg != NULL:
            CWKIT_PREFETCH(self.sg + j * self.stride)
        if self.up != NULL:
            CWKIT_PREFETCH(self.up + j * self.stride)

    cdef Py_ssize_t entries(self, row) except -2:
        """`hashed` entry by entry, for any row: each name and value converted as
        `_named_rows` converts them."""
        cdef Py_ssize_t n = 0, k, pos = 0, cap
        cdef PyObject* pk
        cdef PyObject* pv
        cdef const unsigned char* s
        cdef double val
        cdef object name
        cdef bint is_dict = type(row) is dict
        if not (is_dict or _is_names(row)):
            return -1
        cap = len(row)
        self.room(cap)
        if is_dict:
            while PyDict_Next(row, &pos, &pk, &pv):
                if n == cap or _one_value(<object>pv, &val) != NAMED_OK:
                    return -1
                name = _one_name(<object>pk, &s, &k)    # (s lives as long as name)
                if name is None:
                    return -1
                self.keys[n] = _hashed_key(s, k, self.signed, self.mask, n, &val)
                self.vals[n] = val
                n += 1
        else:
            for key in row:
                name = _one_name(key, &s, &k)
                if n == cap or name is None:
                    return -1
                val = 1.0
                self.keys[n] = _hashed_key(s, k, self.signed, self.mask, n, &val)
                self.vals[n] = val
                n += 1
        return self.canonical(n)

    cdef Py_ssize_t looked_up(self, row, bint grow) except -2:
        """`hashed` with a vocabulary: each name's column in it, as `_named_rows`
        finds it (`NameTable.index`: a new name appended where `grow`, else left
        out); -1 for a row `_named_rows` would refuse, the names it appended taken
        out again (`truncate`).

        A dict of ASCII str names and float values is read in passes, so that the
        misses of one name overlap those of the others: its entries' objects
        (`_dict_objects`), their columns (`_vocab_dict`), then the state of each
        column prefetched.  Any other row is read entry by entry (`vocab_entries`)."""
        cdef Py_ssize_t n, k, size = self.vocab.n, nnz
        if type(row) is not dict:
            return self.vocab_entries(row, grow)
        self.room(len(row))
        n = _dict_objects(row, self.objs, self.cap)
        if n < 0:
            return -1
        nnz = _vocab_dict(self.vocab, self.objs, n, self.keys, self.vals, grow)
        if nnz == -1:
            return self.vocab_entries(row, grow)
        if nnz < 0:
            return self.truncate(size)
        for k in range(nnz):
            self.fetch(self.keys[k] >> 32)
        nnz = self.canonical(nnz)
        return nnz if nnz >= 0 else self.truncate(size)

    cdef Py_ssize_t vocab_entries(self, row, bint grow) except -2:
        """`looked_up` entry by entry, for any row."""
        cdef Py_ssize_t n = 0, pos = 0, cap, size = self.vocab.n, j, nnz
        cdef PyObject* pk
        cdef PyObject* pv
        cdef double val
        cdef bint is_dict = type(row) is dict
        if not (is_dict or _is_names(row)):
            return -1
        cap = len(row)
        self.room(cap)
        if is_dict:
            while PyDict_Next(row, &pos, &pk, &pv):
                if n == cap or not (cwkit_exact_float(pv, &val) and isfinite(val)
                                    or _one_value(<object>pv, &val) == NAMED_OK):
                    return self.truncate(size)
                j = self.column(<object>pk, grow)
                if j < -1:
                    return self.truncate(size)
                if j >= 0:
                    self.keys[n] = (<unsigned long long>j << 32) | <unsigned long long>n
                    self.vals[n] = val
                    n += 1
        else:
            for key in row:
                j = self.column(key, grow)
                if n == cap or j < -1:
                    return self.truncate(size)
                if j >= 0:
                    self.keys[n] = (<unsigned long long>j << 32) | <unsigned long long>n
                    self.vals[n] = 1.0
                    n += 1
        nnz = self.canonical(n)
        return nnz if nnz >= 0 else self.truncate(size)

    cdef inline Py_ssize_t column(self, key, bint grow) except -4:
        """The vocabulary's column of the name `key` (`NameTable.index`): -1 for a new
        name not added, -2 for a key that is not a name, -3 for a full vocabulary."""
        cdef Py_ssize_t size
        cdef const unsigned char* s
        if cwkit_exact_str(<PyObject*>key, &size) == NULL:
            key = _one_name(key, &s, &size)
            if key is None:
                return -2
        return self.vocab.index(key, grow)

    cdef Py_ssize_t truncate(self, Py_ssize_t size) except -2:
        """The vocabulary back to its first `size` names (``Vocabulary.truncate``): -1."""
        self.vocab.truncate(size)
        return -1

    cdef Py_ssize_t canonical(self, Py_ssize_t n) noexcept:
        """The n hashed entries in `keys`, `vals` written canonical into `data`, `idx`:
        their number, or -1 where a column's sum is not finite."""
        cdef Py_ssize_t nnz = _canonical(self.keys, self.keys + self.cap, self.vals,
                                         self.data, self.idx, n,
                                         <Py_ssize_t>1 << self.bits if self.vocab is None
                                         else self.vocab.n)
        cdef Py_ssize_t k
        for k in range(nnz):
            if not isfinite(self.data[k]):
                return -1
        return nnz

    def learn(self, est, x, y):
        """``partial_fit``'s round of `est` on the named row `x` of label `y`, under
        its lock: 1, or 2 when a variance newly collapsed (the caller warns), or
        -status when the round failed (``t_`` advanced as ``partial_fit`` advances
        it; the caller raises); 0, having done nothing, where this path is not
        taken."""
        return self.learn_row(est, est.__dict__, x, y)

    cdef int learn_row(self, est, dict d, x, y) except? -100:
        """`learn` of `est`, whose __dict__ is `d`."""
        if not self.locked(d):
            return 0
        try:
            return self._learn(est, d, x, y)
        finally:
            self.lock.leave()

    cdef bint locked(self, dict d) except -1:
        """Take the estimator's lock (True), a C call; False, not taken, where it
        has none yet.  (The lock noted with `d`'s version is the one `d` holds.)"""
        cdef PyObject* lock
        if not (self.seen_d == <PyObject*>d
                and cwkit_dict_version(<PyObject*>d) == self.seen[0]):
            lock = _get(d, "_lock")
            if type(<object>lock) is not StateLock:
                return False
            if lock != <PyObject*>self.lock:    # (what was noted was under another)
                self.lock = <StateLock>lock
                self.seen_d = NULL
        self.lock.enter()
        return True

    cdef int _learn(self, est, dict d, x, y) except? -100:
        cdef PyObject* found
        cdef Py_ssize_t nnz, code = 0, size = 0
        cdef int done
        cdef double[::1] target
        cdef bint known = self.unchanged(d, True)
        if self.classes is None:      # a regressor: a finite real target
            if not (type(y) is float or type(y) is np.float64 or (
                    type(y) is int and -2**53 <= y <= 2**53)):
                return 0
            self.y_real[0] = y
            if not isfinite(self.y_real[0]) or not (known or self.current(est, d, True)):
                return 0
            target = self.y_real
        else:
            if not (type(y) is bool or type(y) is int or type(y) in self.label_types):
                return 0
            found = PyDict_GetItem(self.codes, y)
            if found == NULL or not (known or self.current(est, d, True)):
                return 0
            code = <object>found
            self.code[0] = code
            target = self.y_pos if code else self.y_neg     # (two classes)
        if self.vocab is not None:
            size = self.vocab.n
            if size != self.D - 1:
                return 0
        nnz = self.hashed(x, True)
        if nnz < 0 or (self.vocab is not None and self.vocab.n != size
                       and not self.widened(d, size)):
            return 0
        done = self.round(d, self.data, self.idx, nnz, target, code, known)
        if done < 0 and self.vocab is not None:     # (as `_learn_named`: the model
            self.truncate(size)                     # stays wider)
        return done

    cdef int round(self, dict d, const double* data, const int* idx, Py_ssize_t nnz,
                   double[::1] target, Py_ssize_t code, bint known) except? -100:
        """`learn`'s round, after its checks, on the row of `nnz` canonical entries
        `data`, `idx` (of at most `D - 1` columns; `room` made for them) whose target
        is `target` (class index `code`, also in `self.code`); `known`: `unchanged`
        held."""
        cdef double bias, e
        cdef Counts cnt
        cdef Rows R
        bias = self.x0
        self.ptr[0] = 0
        self.ptr[1] = nnz
        R.data = data
        R.indices = idx
        R.indptr = self.ptr
        R.dense_idx = NULL
        R.n_cols = self.D - 1
        R.unchecked = False
        cnt.rounds = cnt.mistakes = cnt.updates = 0
        cnt.loss_sum = 0.0
        cnt.status = OK
        cnt.pos = cnt.collapsed = -1
        cnt.clean = NULL
        cnt.out = self.out
        cnt.y = &target[0]
        cnt.wt = NULL
        memset(self.ahead, 0, (nnz + 1) * sizeof(int))
        if self.shape == ONE_FIRST_ORDER:
            first_order_rows(&R, &cnt, target, self.order1, bias, self.w, self.stride,
                             self.D, self.aux, self.keep_sum, self.up, &self.h,
                             self.h.task, self.eps, self.save, self.ahead)
        elif self.shape == ONE_DIAGONAL:
            diag_rows(&R, &cnt, target, self.order1, bias, self.w, self.stride, self.D,
                      self.up, &self.h, self.save, nnz + 1, self.ahead)
        elif self.shape == ONE_MC_FIRST_ORDER:
            mc_first_order_rows(&R, &cnt, self.code, self.order1, bias, self.ovr, self.w,
                                self.K, self.stride, self.D, self.aux, self.na, self.up,
                                &self.h, self.out + self.K, self.act)
        else:
            mc_diag_rows(&R, &cnt, self.code, self.order1, bias, self.ovr, self.w,
                         self.sg, self.K, self.stride, self.D, &self.h, self.sum_update, self.up,
                         self.out + self.K, nnz + 1)
        if known:
            self.counted(d, &cnt)
        else:
            self.counts(d, &cnt)
        if cnt.status != OK:
            return -cnt.status
        if self.cal is None:     # a regressor's errors (its `_learn`, `_count_last`)
            e = self.y_real[0] - self.out[0]
            d["squared_error_"] = d["squared_error_"] + e * e
            d["absolute_error_"] = d["absolute_error_"] + fabs(e)
            d["last_squared_error_"] = e * e
            d["last_absolute_error_"] = fabs(e)
        else:
            self.calibrated(code, known)
        self.noted(d, True)
        return 2 if cnt.collapsed >= 0 else 1

    cdef bint widened(self, dict d, Py_ssize_t size) except -1:
        """The model grown to the vocabulary's width as ``partial_fit`` grows it
        (`widen_dict`, in the room ``cwkit.models.growth`` made), and
        ``n_features_in_`` (in `d`) with it: True; False, the names after the first
        `size` taken out again, where the model has no such room (the general path
        then grows it).

        Its spec is this path's (`current`), and its own (``_own_spec``, widened in
        place); its arrays, the prefixes of their buffers, are widened in place, so
        that only their views and the width change (`arrays`, `D`), not where the
        values are (`read_state`'s pointers)."""
        cdef Py_ssize_t width = self.vocab.n
        cdef object n = width
        if (_get(self.model_dict, "_own_spec") != <PyObject*>self.spec
                or widen_dict(self.model_dict, width, n) != 1):
            self.truncate(size)
            return False
        d["n_features_in_"] = n
        self.arrays = self.state_arrays()
        self.D = width + 1
        return True

    cdef tuple state_arrays(self):
        """The state's arrays of `array_keys` (None where absent)."""
        cdef Py_ssize_t k, m = len(self.array_keys)
        cdef tuple out = PyTuple_New(m)
        cdef PyObject* a
        for k in range(m):
            a = _get(self.state, self.array_keys[k])
            Py_INCREF(<object>a)
            PyTuple_SET_ITEM(out, k, <object>a)
        return out

    cdef int counts(self, dict d, const Counts* cnt) except -1:
        """The round's counters added to the estimator's (its __dict__ `d`), as
        ``partial_fit`` adds them (``t_`` alone where the round failed); their
        values kept in `count`, `plain` cleared where one is not a small int."""
        cdef long long* c = self.count
        self.plain &= _add(d, "t_", cnt.rounds, &c[C_T])
        if cnt.status != OK:
            return 0
        self.plain &= _add(d, "mistakes_", cnt.mistakes, &c[C_MISTAKES])
        self.plain &= _add(d, "n_updates_", cnt.updates, &c[C_UPDATES])
        _set_count(d, "last_mistakes_", cnt.mistakes)
        _set_count(d, "last_n_updates_", cnt.updates)
        c[C_LAST_MISTAKES] = cnt.mistakes
        c[C_LAST_UPDATES] = cnt.updates
        return 0

    cdef int counted(self, dict d, const Counts* cnt) except -1:
        """`counts` where the counters are known (`unchanged`): in `count`."""
        cdef long long* c = self.count
        _bump(d, "t_", cnt.rounds, &c[C_T])
        if cnt.status != OK:
            return 0
        _bump(d, "mistakes_", cnt.mistakes, &c[C_MISTAKES])
        _bump(d, "n_updates_", cnt.updates, &c[C_UPDATES])
        if c[C_LAST_MISTAKES] != cnt.mistakes:
            d["last_mistakes_"] = c[C_LAST_MISTAKES] = cnt.mistakes
        if c[C_LAST_UPDATES] != cnt.updates:
            d["last_n_updates_"] = c[C_LAST_UPDATES] = cnt.updates
        return 0

    cdef int calibrated(self, Py_ssize_t code, bint known) except -1:
        """The round of scores `out` and class index `code` recorded in the
        calibration window, as ``Calibration.add`` records it (its rounds in
        `count` where `known`)."""
        cdef dict cd = self.cal_dict
        cdef object seen
        cdef long long* c = &self.count[C_SEEN]
        cdef Py_ssize_t k
        if known:       # (the window's last slopes were cleared by the last round)
            k = c[0] % self.window
            _bump(cd, "seen", 1, c)
        else:
            seen = <object>_get(cd, "seen")
            if _small(seen, c) and c[0] >= 0:
                k = c[0] % self.window
            else:
                k = seen % self.window
                self.plain = False
            _add(cd, "seen", 1, c)
            if _get(cd, "_slopes") != <PyObject*>None:
                cd["_slopes"] = None
        if self.K:
            memcpy(self.cal_s + k * self.K, self.out, self.K * sizeof(double))
        else:
            self.cal_s[k] = self.out[0]
        self.cal_l[k] = code
        return 0

    def score(self, est, x):
        """``decision_function``'s score of the named row `x` for `est`, under its
        lock (a float; a multi-class model's, an array of its K scores); None, having
        done nothing, where this path is not taken or a score is not finite (the
        general path reports it)."""
        return self.score_row(est, est.__dict__, x)

    cdef object score_row(self, est, dict d, x):
        """`score` of `est`, whose __dict__ is `d`."""
        if not self.locked(d):
            return None
        try:
            if not self.scored(est, d, x):
                return None
            if self.K:
                return np.array(<double[:self.K]>self.out)
            return self.out[0]
        finally:
            self.lock.leave()

    cdef bint scored(self, est, dict d, x) except -1:
        """The scores of the named row `x` written to `out` (its K scores, or its
        one): True; False, having done nothing, as `score`."""
        cdef Py_ssize_t nnz, j, c, p, K = self.K
        cdef double dot, xj
        cdef double* out = self.out
        if not self.unchanged(d, False):
            if not self.current(est, d, False):
                return False
            self.noted(d, False)
        if self.vocab is not None and self.vocab.n != self.D - 1:
            return False
        nnz = self.hashed(x, False)
        if nnz < 0:
            return False
        out = self.out      # (`hashed` may have moved it)
        if K == 0:
            dot = self.weight(self.D - 1) * self.x0
            for j in range(nnz):
                dot += self.weight(self.idx[j]) * self.data[j]
            out[0] = dot
            return isfinite(dot)
        for c in range(K):
            out[c] = self.mc_weight(self.D - 1, c) * self.x0
        for j in range(nnz):
            p = self.idx[j]
            xj = self.data[j]
            for c in range(K):
                out[c] += self.mc_weight(p, c) * xj
        return all_finite(out, K)

    cdef double bias(self, est, dict d) except? -1.0:
        """The intercept's feature value: ``intercept_scaling_``, 0 without intercept."""
        cdef PyObject* fit = _get(d, "fit_intercept")
        if fit == <PyObject*>_TRUE or (fit != <PyObject*>_FALSE
                                       and _attr(est, d, "fit_intercept")):
            return <object>_get(d, "intercept_scaling_")
        return 0.0

    cdef inline double weight(self, Py_ssize_t p) noexcept:
        """The weight ``weights()[p]`` reports: first-order ``averaged_first_order``
        (s v without averaging), diagonal ``mean_of_rounds`` of mu."""
        cdef double t, S, mu
        if self.shape == ONE_FIRST_ORDER:
            t = self.aux[AUX_T]
            p *= self.stride
            if self.up == NULL or not t > 0.0:
                return self.aux[AUX_S] * self.w[p]
            S = self.aux[AUX_SSUM] if self.keep_sum else t
            return ((S + 1.0) * self.w[p] - self.up[p]) / t
        mu = self.w[p * self.stride]
        if self.up == NULL:
            return mu
        t = self.up[self.D * self.stride]
        return mu if t == 0.0 else ((t + 1.0) * mu - self.up[p * self.stride]) / t

    cdef inline double mc_weight(self, Py_ssize_t p, Py_ssize_t c) noexcept:
        """The weight ``weights_dk()[p, c]`` of a multi-class model reports, as
        `weight` (first-order: class c's aux row in one-vs-rest)."""
        cdef Py_ssize_t q = p * self.stride + c
        cdef double t, S
        cdef double* a
        if self.shape == ONE_MC_FIRST_ORDER:
            a = self.aux + (c if self.ovr else 0) * self.na
            t = a[AUX_T]
            if self.up == NULL or not t > 0.0:
                return a[AUX_S] * self.w[q]
            S = a[AUX_SSUM] if self.keep_sum else t
            return ((S + 1.0) * self.w[q] - self.up[q]) / t
        if self.up == NULL:
            return self.w[q]
        t = self.up[self.D * self.stride]
        return self.w[q] if t == 0.0 else ((t + 1.0) * self.w[q] - self.up[q]) / t

    def scores(self, est, list rows):
        """``decision_function``'s scores of the named `rows` (an array: (n,), or (n,
        K) for a multi-class model), as `score` scores each; None, having done
        nothing, as `score` for any of them."""
        cdef dict d = est.__dict__
        cdef Py_ssize_t i, n = len(rows), m = max(self.K, 1)
        cdef double[:, ::1] view
        out = np.empty((n, m))
        view = out
        if not self.locked(d):
            return None
        try:
            for i in range(n):
                if not self.scored(est, d, rows[i]):
                    return None
                memcpy(&view[i, 0], self.out, m * sizeof(double))
        finally:
            self.lock.leave()
        return out if self.K else out.reshape(n)

    def proba(self, est, x):
        """``predict_proba_one``'s dict {class: probability} of the named row `x`, as
        ``Calibration.proba`` computes it from `score`'s scores (`_softmax` of
        ``(0, s)`` for two classes, else of the K scores, with the predicted class's
        slope), or None as `score` (and for a regressor, or more than
        `_SOFTMAX_MAX` classes)."""
        return self.proba_row(est, est.__dict__, x)

    cdef object proba_row(self, est, dict d, x):
        """`proba` of `est`, whose __dict__ is `d`."""
        cdef double two[8]
        cdef double* S
        cdef double* p
        cdef Py_ssize_t c, K = self.K if self.K else 2
        cdef dict proba
        if self.classes is None or K > _SOFTMAX_MAX or not self.locked(d):
            return None
        try:
            if not self.scored(est, d, x):
                return None
            if self.K:
                S = self.out
                p = _softmax(S, K, self.slopes()[argmax_first(S, K)], self.out + K)
            else:
                S = two
                S[0], S[1] = 0.0, self.out[0]      # (`_as_classes`)
                p = _softmax(S, K, self.slopes()[argmax_first(S, K)], two + 2)
            proba = {}
            for c in range(K):
                proba[self.class_keys[c]] = p[c]
            return proba
        finally:
            self.lock.leave()

    cdef const double* slopes(self) except NULL:
        """The calibration's slopes, one per predicted class (the window's, cached
        while it holds; ``Calibration.slopes``, which fits them, otherwise)."""
        cdef double[::1] slopes
        cdef PyObject* cached = _get(self.cal_dict, "_slopes")
        if cached == <PyObject*>None or cached != <PyObject*>self.slopes_of:
            self.slopes_of = slopes = (<object>cached if cached != <PyObject*>None
                                       else self.cal.slopes())
            self.slopes_p = &slopes[0]
        return self.slopes_p

    cdef object predict_row(self, est, dict d, x):
        """``predict``'s prediction of the named row `x` for `est` (whose __dict__ is
        `d`): its class (a numpy scalar), a regressor's value (a float); None as
        `score`."""
        if not self.locked(d):
            return None
        try:
            if not self.scored(est, d, x):
                return None
            if self.classes is None:
                return self.out[0]
            if self.K:
                return self.labels[argmax_first(self.out, self.K)]
            return self.positive if self.out[0] > 0.0 else self.negative
        finally:
            self.lock.leave()


cdef inline dict _dict_of(est):
    """The __dict__ of the estimator `est`."""
    return <dict>PyObject_GenericGetDict(est, NULL)


cdef inline NamedOne _one_of(dict d):
    """The estimator's compiled one-row path (its ``_one``), None without."""
    cdef PyObject* p = _get(d, "_one")
    return <NamedOne>p if type(<object>p) is NamedOne else None


def learn_one(self, x, y, classes=None):
    """Learn from one row of named features: one online round (``partial_fit``).

    Parameters
    ----------
    x : dict of str -> number, or list / tuple / set of str
        The row (see :mod:`cwkit.features`).
    y : label, or a regressor's real target
    classes : array-like, optional
        A classifier's: all labels of the stream, needed on the first call (as in
        ``partial_fit``) unless `y` is a bool (then ``[False, True]``).  A regressor
        ignores it.

    Returns
    -------
    self

    Notes
    -----
    The round is ``partial_fit``'s on the row's CSR matrix, bit for bit.  On a
    fitted first-order or diagonal model (two classes, more with top-1 or
    one-vs-rest, or a regressor) of hashed names or of a vocabulary, which it
    grows, without class weights it is this one
    compiled call (the estimator's ``cwkit._core.NamedOne``); otherwise, or for a
    row or label that path does not take, the estimator's ``_learn_one``.
    """
    cdef dict d = _dict_of(self)
    cdef NamedOne one = _one_of(d)
    cdef int done
    if one is not None:
        done = one.learn_row(self, d, x, y)
        if done == 1:
            return self
        if done:
            return self._one_done(done)
    return self._learn_one(x, y, classes)


def predict_one(self, x):
    """The prediction for one named row, scored over its own features: its label (a
    classifier's) or value (a regressor's, a float).

    Notes
    -----
    ``predict``'s prediction of the row's CSR matrix, bit for bit: one compiled call
    (``cwkit._core.NamedOne``) where ``learn_one`` takes one, else the
    estimator's ``_predict_one``.
    """
    cdef dict d = _dict_of(self)
    cdef NamedOne one = _one_of(d)
    if one is not None:
        label = one.predict_row(self, d, x)
        if label is not None:
            return label
    return self._predict_one(x)


def predict_proba_one(self, x):
    """The calibrated probability of each class for one named row, as a dict
    ``{class: probability}`` (see ``predict_proba``).

    Notes
    -----
    ``predict_proba``'s row of the row's CSR matrix, bit for bit: one compiled call
    (``cwkit._core.NamedOne``) where ``learn_one`` takes one, else the estimator's
    ``_predict_proba_one``.
    """
    cdef dict d = _dict_of(self)
    cdef NamedOne one = _one_of(d)
    if one is not None:
        proba = one.proba_row(self, d, x)
        if proba is not None:
            return proba
    return self._predict_proba_one(x)
