"""The papers cwkit implements, by the keys its docstrings, messages and help cite them
with ([AROW13]): an installed copy has no docs/references.md to look them up in, so
``cwkit algos --references`` and every ``--help`` print them from here (the same
citations as that file; tests/test_docs.py keeps the two in step)."""
import re

__all__ = ["REFERENCES", "cited", "text"]

#: key -> full citation
REFERENCES = {
    "Ros58": (
        'F. Rosenblatt. The perceptron: a probabilistic model for information storage and '
        'organization in the brain. Psychological Review 65(6):386–408, 1958.'),
    "FS99": (
        'Y. Freund, R. E. Schapire. Large margin classification using the perceptron '
        'algorithm. Machine Learning 37(3):277–296, 1999.'),
    "CS03": (
        'K. Crammer, Y. Singer. Ultraconservative online algorithms for multiclass problems. '
        'Journal of Machine Learning Research 3:951–991, 2003.'),
    "SOP05": (
        'N. Cesa-Bianchi, A. Conconi, C. Gentile. A second-order perceptron algorithm. SIAM '
        'Journal on Computing 34(3):640–668, 2005.'),
    "PA06": (
        'K. Crammer, O. Dekel, J. Keshet, S. Shalev-Shwartz, Y. Singer. Online '
        'passive-aggressive algorithms. Journal of Machine Learning Research 7:551–585, 2006.'),
    "CW08": (
        'M. Dredze, K. Crammer, F. Pereira. Confidence-weighted linear classification. Proc. '
        '25th International Conference on Machine Learning (ICML), 2008.'),
    "ECCW08": (
        'K. Crammer, M. Dredze, F. Pereira. Exact convex confidence-weighted learning. '
        'Advances in Neural Information Processing Systems 21 (NIPS 2008), 345–352.'),
    "DSSC08": (
        'J. Duchi, S. Shalev-Shwartz, Y. Singer, T. Chandra. Efficient projections onto the '
        'l1-ball for learning in high dimensions. Proc. 25th ICML, 2008.'),
    "AROW09": (
        'K. Crammer, A. Kulesza, M. Dredze. Adaptive regularization of weight vectors. '
        'Advances in Neural Information Processing Systems 22 (NIPS 2009).'),
    "LMC09": (
        'J. Shen, T. G. Dietterich. A family of large margin linear classifiers and its '
        'application in dynamic environments. Statistical Analysis and Data Mining '
        '2(5–6):328–345, 2009.'),
    "WDL09": (
        'K. Weinberger, A. Dasgupta, J. Langford, A. Smola, J. Attenberg. Feature hashing for '
        'large scale multitask learning. Proc. 26th International Conference on Machine '
        'Learning (ICML), 2009.'),
    "DHS11": (
        'J. Duchi, E. Hazan, Y. Singer. Adaptive subgradient methods for online learning and '
        'stochastic optimization. Journal of Machine Learning Research 12:2121–2159, 2011.'),
    "AROW13": (
        'K. Crammer, A. Kulesza, M. Dredze. Adaptive regularization of weight vectors. '
        'Machine Learning 91(2):155–187, 2013.'),
    "NHERD10": (
        'K. Crammer, D. D. Lee. Learning via Gaussian herding. Advances in Neural '
        'Information Processing Systems 23 (NIPS 2010), 451–459.'),
    "VC11": (
        'N. Vaits, K. Crammer. Re-adapting the regularization of weights for non-stationary '
        'regression. Proc. 22nd International Conference on Algorithmic Learning Theory '
        '(ALT 2011), LNCS 6925, Springer, 114–128.'),
    "SCW12": (
        'J. Wang, P. Zhao, S. C. H. Hoi. Exact soft confidence-weighted learning. Proc. '
        '29th International Conference on Machine Learning (ICML), 2012.'),
    "GPA13": (
        'A. Pérez-Suay, F. J. Ferri, M. Arevalillo-Herráez, J. V. Albert. An empirical study '
        'about online learning with generalized passive-aggressive approaches. Pattern '
        'Recognition and Image Analysis (IbPRIA 2013), LNCS 7887, Springer, 2013.'),
    "IPM10": (
        'R. McDonald, K. Hall, G. Mann. Distributed training strategies for the structured '
        'perceptron. Proc. NAACL-HLT 2010, 456–464.'),
    "MDCW10": (
        'M. Dredze, A. Kulesza, K. Crammer. Multi-domain learning by confidence-weighted '
        'parameter combination. Machine Learning 79(1–2):123–149, 2010.'),
    "AFO21": (
        'S. J. Reddi, Z. Charles, M. Zaheer, Z. Garrett, K. Rush, J. Konečný, S. Kumar, H. B. '
        'McMahan. Adaptive federated optimization. Proc. 9th International Conference on '
        'Learning Representations (ICLR), 2021.'),
    "OKC09": (
        'F. Orabona, J. Keshet, B. Caputo. Bounded kernel-based online learning. Journal '
        'of Machine Learning Research 10:2643–2666, 2009.'),
    "WV10": (
        'Z. Wang, S. Vucetic. Online passive-aggressive algorithms on a budget. Proc. 13th '
        'International Conference on Artificial Intelligence and Statistics (AISTATS '
        '2010), JMLR W&CP 9:908–915.'),
    "DSS08": (
        'O. Dekel, S. Shalev-Shwartz, Y. Singer. The Forgetron: a kernel-based perceptron on '
        'a budget. SIAM Journal on Computing 37(5):1342–1372, 2008.'),
    "RR07": (
        'A. Rahimi, B. Recht. Random features for large-scale kernel machines. Advances in '
        'Neural Information Processing Systems 20 (NIPS 2007).'),
    "WS01": (
        'C. K. I. Williams, M. Seeger. Using the Nyström method to speed up kernel machines. '
        'Advances in Neural Information Processing Systems 13 (NIPS 2000), 2001.'),
    "MRS08": (
        'C. D. Manning, P. Raghavan, H. Schütze. Introduction to Information Retrieval. '
        'Cambridge University Press, 2008.'),
    "CZ97": (
        'Y. Censor, S. A. Zenios. Parallel Optimization: Theory, Algorithms, and '
        'Applications. Oxford University Press, 1997.'),
    "Pla99": (
        'J. C. Platt. Probabilistic outputs for support vector machines and comparisons to '
        'regularized likelihood methods. In Advances in Large Margin Classifiers, 61–74, MIT '
        'Press, 1999.'),
    "CCG04": (
        'N. Cesa-Bianchi, A. Conconi, C. Gentile. On the generalization ability of on-line '
        'learning algorithms. IEEE Transactions on Information Theory 50(9):2050–2057, 2004.'),
    "Lem21": (
        'D. Lemire. Number parsing at a gigabyte per second. Software: Practice and '
        'Experience 51(8):1700–1727, 2021.'),
}

_KEY = re.compile(r"\[([A-Z][A-Za-z]*\d\d)\]")


def text(keys=None):
    """``[KEY] citation`` lines of ``keys`` (default: every paper), in the given order."""
    keys = REFERENCES if keys is None else keys
    return "".join(f"  [{k}] {REFERENCES[k]}\n" for k in keys)


def cited(text_):
    """The references block for the keys ``text_`` cites (``""`` if none): a title line,
    then each cited paper once, in the order of its first citation."""
    keys = list(dict.fromkeys(k for k in _KEY.findall(text_) if k in REFERENCES))
    return f"\nreferences:\n{text(keys)}" if keys else ""
