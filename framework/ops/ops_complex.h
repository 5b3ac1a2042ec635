/* ops_complex.h - complex arithmetic from parts (ops/complex.c), called by
 * the real ops when an operand is complex (private to ops/). */
#ifndef FW_OPS_COMPLEX_H
#define FW_OPS_COMPLEX_H

#include "fw/tensor.h"

enum { FW_CX_ADD, FW_CX_SUB, FW_CX_MUL, FW_CX_DIV };
enum { FW_CX_NEG, FW_CX_CONJ, FW_CX_ABS };

/* a (op) b with either operand complex (the other real or complex). */
int fw__complex_arith(fw_tensor **out, int op, fw_tensor *a, fw_tensor *b);
/* neg, conj or abs (a real result) of a complex x. */
int fw__complex_unary(fw_tensor **out, int op, fw_tensor *x);
/* sum or mean of a complex x. */
int fw__complex_sum(fw_tensor **out, fw_tensor *x, const int *axes, int naxes, bool keepdim,
                    bool mean);
/* a == b (or a != b when ne) elementwise, either operand complex: bool. */
int fw__complex_equal(fw_tensor **out, fw_tensor *a, fw_tensor *b, bool ne);
/* matmul with either operand complex. */
int fw__complex_matmul(fw_tensor **out, fw_tensor *x, fw_tensor *y, bool tx, bool ty);

#endif
