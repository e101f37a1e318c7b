"""The models: the state of a classifier and the calls into the compiled core.

Layer between validation (``cwkit._params``, ``cwkit._rowdata``) and the
estimators (``cwkit.base`` and its families).  Every model implements
:class:`cwkit.models.interface.Model`, is described by a
:class:`cwkit.models.interface.ModelSpec` and is built by
:func:`cwkit.models.factory.build_model`, the one place where the choice
"shape of state x number of classes x multi-class strategy" is made.

Modules (each imports only those above it):

* ``rules``: the rule table, one row of facts per rule of the compiled core;
* ``interface``: ``ModelSpec``, ``PassResult``, the ``Model`` base class,
  ``ModelError`` and ``raise_status`` (the one translation of a driver status);
* ``scoring``: row scores and Gaussian-weight probabilities;
* ``binary``: the binary models (first-order, diagonal, full, diagonal SOP, AdaGrad);
* ``multiclass``: their multi-class forms on the 1-of-k feature map (top-1, one-vs-rest);
* ``topk``: the k-best updates (PA family, AROW);
* ``ovr``: one-vs-rest over K binary models (mini-batch PA, L1-PA);
* ``minibatch``: mini-batch PA, binary and multi-class;
* ``l1``: the L1-norm-constrained PA, binary and multi-class;
* ``kernel``: the kernel (dual) models, a support set and its coefficients;
* ``collapse``: variances of the diagonal Gaussian-weight rules collapsing to 0;
* ``size``: the memory of a model from its spec, checked before building it;
* ``factory``: ``build_model``, the table of all of them.

A new shape of state or a new way of training is one new module here whose
classes implement ``Model``, plus its rows in the table of ``factory``.
"""
