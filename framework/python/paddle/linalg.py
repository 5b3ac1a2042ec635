"""paddle.linalg (Paddle's python/paddle/linalg.py): the linear-algebra
namespace; every function lives in paddle/tensor/linalg.py."""
from .tensor.linalg import (  # noqa: F401
    cholesky, cholesky_inverse, cholesky_solve, cond, corrcoef, cov, det, eigh, eigvalsh,
    householder_product, inv, lstsq, lu, lu_solve, lu_unpack, matrix_exp, matrix_norm,
    matrix_power, matrix_rank, multi_dot, norm, pca_lowrank, pinv, qr, slogdet, solve, svd,
    svd_lowrank, svdvals, triangular_solve, vecdot, vector_norm)

__all__ = ['cholesky', 'cholesky_inverse', 'cholesky_solve', 'cond', 'corrcoef', 'cov', 'det',
           'eigh', 'eigvalsh', 'householder_product', 'inv', 'lstsq', 'lu', 'lu_solve',
           'lu_unpack', 'matrix_exp', 'matrix_norm', 'matrix_power', 'matrix_rank', 'multi_dot',
           'norm', 'pca_lowrank', 'pinv', 'qr', 'slogdet', 'solve', 'svd', 'svd_lowrank',
           'svdvals', 'triangular_solve', 'vecdot', 'vector_norm']
