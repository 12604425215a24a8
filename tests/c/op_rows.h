/* The elementwise ops of the op table (src/core/ops.def) as test rows,
 * generated from the table itself: a new MIXP_UNARY or MIXP_BINARY row is in
 * every test that walks these arrays (the F64 gradchecks of
 * test_elementwise.c, the CPU/CUDA parity of test_cuda_parity_ops.c) without
 * an edit there. What is truly op-specific -- where its gradient is checked,
 * its scalar -- stays in each test as an override keyed by name.
 * tests/ops/check_op_coverage.py counts an op as covered by a test that
 * walks these arrays, except rows with c_args Custom, whose C signature
 * only the test can call (mt_unary_row.x and .xs are both NULL). */
#ifndef MIXP_TEST_OP_ROWS_H
#define MIXP_TEST_OP_ROWS_H

#include "mixp/mixp.h"

typedef mixp_status (*mt_unary_x_fn)(const mixp_tensor *x, mixp_tensor **out);
typedef mixp_status (*mt_unary_xs_fn)(const mixp_tensor *x, double s, mixp_tensor **out);
typedef mixp_status (*mt_binary_row_fn)(const mixp_tensor *a, const mixp_tensor *b, mixp_tensor **out);

typedef struct mt_unary_row {
  const char *name;       /* the op's name (mixp_op_name) */
  const char *c_function; /* "mixp_relu" */
  mt_unary_x_fn x;        /* c_args X: f(x, out) */
  mt_unary_xs_fn xs;      /* c_args XS: f(x, s, out) */
} mt_unary_row;

typedef struct mt_binary_row {
  const char *name;
  const char *c_function;
  mt_binary_row_fn f;
} mt_binary_row;

#define MT_ROW_FNS_X(c_function) c_function, NULL
#define MT_ROW_FNS_XS(c_function) NULL, c_function
#define MT_ROW_FNS_Custom(c_function) NULL, NULL
#define MIXP_UNARY(Enum, name, c_function, reads, category, c_args) \
  {#name, #c_function, MT_ROW_FNS_##c_args(c_function)},
static const mt_unary_row mt_unary_rows[] = {
#include "../../src/core/ops.def"
};
#undef MT_ROW_FNS_X
#undef MT_ROW_FNS_XS
#undef MT_ROW_FNS_Custom
#define MT_UNARY_ROWS ((int)(sizeof mt_unary_rows / sizeof mt_unary_rows[0]))

#define MIXP_BINARY(Enum, name, c_function, category) {#name, #c_function, c_function},
static const mt_binary_row mt_binary_rows[] = {
#include "../../src/core/ops.def"
};
#define MT_BINARY_ROWS ((int)(sizeof mt_binary_rows / sizeof mt_binary_rows[0]))

/* Calls a unary row with scalar s (ignored by X rows); a Custom row is
 * called by `custom`, which the test writes for that op's signature. */
static inline mixp_status mt_unary_row_call(const mt_unary_row *row, const mixp_tensor *x, double s,
                                            mixp_status (*custom)(const char *name, const mixp_tensor *x,
                                                                  mixp_tensor **out),
                                            mixp_tensor **out) {
  if (row->x) return row->x(x, out);
  if (row->xs) return row->xs(x, s, out);
  return custom(row->name, x, out);
}

#endif
