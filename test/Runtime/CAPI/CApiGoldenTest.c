/*===- CApiGoldenTest.c - the C API from C: a golden layer's prefill and decodes against the golden's captures ===*
 *
 *   CApiGoldenTest GOLDEN LIBRARIES_DIR [--flow-only]
 *
 * Compiled as C99. Opens layer 0's CPU step library (written by `dsa-run --golden GOLDEN --emit-libraries=DIR`)
 * through dsa-c/runtime.h, binds the golden's weights (GoldenOracle.h: regenerated from the golden's seeds, in the
 * manifest's order), and runs the golden's three regimes (prefill12 at start_pos 0, decode12, decode13) on the
 * golden's L0.attn_in, comparing each step's output with L0.attn_out by section 12's comparator and the ring read
 * back after decode13 with its L0.sa_kv (the reference's window cache, slot p % W holding position p). A step
 * that fails (out of order) must leave the position and the ring as they were. Prints one verdict line per check,
 * then "c api golden: N passed, M failed"; exit status 0 iff every check passed. GPU step libraries (DIR written with
 * --backend=gpu) run the same way on CUDA device 0; --flow-only skips the comparisons with the golden (SKIP lines),
 * for the test double driver, which computes nothing (CApiGpuFlowOnFakeDriver).
 *
 *===----------------------------------------------------------------------------------------------------------===*/
#include "dsa-c/runtime.h"

#include "GoldenOracle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed = 0, failed = 0, flow_only = 0;

static void count(int ok) {
  if (ok)
    ++passed;
  else
    ++failed;
}

static void check(int ok, const char *what) {
  printf("%s  %s\n", ok ? "PASS" : "FAIL", what);
  count(ok);
}

/* A comparator verdict: its own line (formatVerdict's, PASS or FAIL first). */
static void verdict(int ok, const char *line) {
  if (flow_only) {
    printf("SKIP  (--flow-only) %s\n", line + 6);
    return;
  }
  printf("%s\n", line);
  count(ok);
}

/* A failed call: print it and stop. */
static void die_on(dsa_status_t status, const char *call) {
  if (!status)
    return;
  fprintf(stderr, "CApiGoldenTest: %s: %s: %s\n", call, dsa_status_code_name(dsa_status_code(status)),
          dsa_status_message(status));
  dsa_status_free(status);
  exit(2);
}

static uint16_t f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN stays NaN */
    return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static float bf16_to_f32(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static size_t elements(const int64_t *shape, int rank) {
  size_t n = 1;
  int d;
  for (d = 0; d < rank; ++d)
    n *= (size_t)shape[d];
  return n;
}

int main(int argc, char **argv) {
  char err[4096], line[4096];
  golden_oracle *oracle;
  dsa_library_t *library = NULL;
  dsa_sequence_t *sequence = NULL;
  dsa_function_info_t info;
  const char *function, *backend, *target;
  size_t num_functions, a, k = 0, num_weights = 0;
  size_t weight_args[64];
  dsa_buffer_t weights[64];
  void *weight_data[64];
  int64_t *weight_shapes[64];
  const char *regimes[3] = {"prefill12", "decode12", "decode13"};
  int r;
  int64_t dim = 0;
  dsa_state_info_t ring_info;
  uint16_t *ring = NULL, *ring_after = NULL;
  size_t ring_count;

  if (argc == 4 && strcmp(argv[3], "--flow-only") == 0)
    flow_only = 1;
  else if (argc != 3) {
    fprintf(stderr, "usage: %s GOLDEN LIBRARIES_DIR [--flow-only]\n", argv[0]);
    return 2;
  }
  check(dsa_c_api_version() == DSA_C_API_VERSION, "dsa_c_api_version() is the header's DSA_C_API_VERSION");
  oracle = golden_oracle_open(argv[1], argv[2], err, sizeof err);
  if (!oracle) {
    fprintf(stderr, "CApiGoldenTest: %s\n", err);
    return 2;
  }
  die_on(dsa_library_open(DSA_C_API_VERSION, golden_oracle_layer_library(oracle, 0), &library), "dsa_library_open");
  die_on(dsa_library_backend(library, &backend, &target), "dsa_library_backend");
  printf("layer 0: %s step library for %s\n", backend, target);
  die_on(dsa_library_function_count(library, &num_functions), "dsa_library_function_count");
  check(num_functions >= 1, "the library has a function");
  die_on(dsa_library_function_name(library, 0, &function), "dsa_library_function_name");
  die_on(dsa_function_info(library, function, &info), "dsa_function_info");
  check(info.x_arg >= 0 && info.start_pos_arg >= 0 && info.output_result >= 0 && info.num_shared == 0 &&
            info.num_state == 1 && (int)info.num_weights == golden_oracle_num_weights(oracle, 0),
        "layer 0 is a window-only step (x, start_pos, output, one state tensor, the manifest's weights)");

  /* The weights: the golden's, converted to each argument's dtype. */
  for (a = 0; a < info.num_args; ++a) {
    dsa_value_info_t arg;
    const char *name;
    const float *values;
    size_t count, i, n;
    die_on(dsa_function_arg(library, function, a, &arg), "dsa_function_arg");
    if (arg.role == DSA_ARG_X) {
      dim = arg.shape[1];
      continue;
    }
    if (arg.role != DSA_ARG_WEIGHT)
      continue;
    if (golden_oracle_weight(oracle, 0, (int)k, &name, &values, &count, err, sizeof err) != 0) {
      fprintf(stderr, "CApiGoldenTest: %s\n", err);
      return 2;
    }
    n = elements(arg.shape, arg.rank);
    if (n != count || (arg.dtype != DSA_DTYPE_BF16 && arg.dtype != DSA_DTYPE_F32) || k >= 64) {
      fprintf(stderr, "CApiGoldenTest: weight %s (%zu values) does not fit argument #%zu (%s)\n", name, count, a,
              arg.type);
      return 2;
    }
    weight_data[k] = malloc(n * dsa_dtype_size(arg.dtype));
    for (i = 0; i < n; ++i) {
      if (arg.dtype == DSA_DTYPE_BF16)
        ((uint16_t *)weight_data[k])[i] = f32_to_bf16(values[i]);
      else
        ((float *)weight_data[k])[i] = values[i];
    }
    weight_args[k] = a;
    weights[k].data = weight_data[k];
    weights[k].size_bytes = n * dsa_dtype_size(arg.dtype);
    weights[k].dtype = arg.dtype;
    weights[k].rank = arg.rank;
    weight_shapes[k] = (int64_t *)malloc(sizeof(int64_t) * (size_t)(arg.rank > 0 ? arg.rank : 1));
    memcpy(weight_shapes[k], arg.shape, sizeof(int64_t) * (size_t)arg.rank);
    weights[k].shape = weight_shapes[k];
    ++k;
  }
  num_weights = k;
  die_on(dsa_sequence_create(library, function, num_weights, weight_args, weights, &sequence), "dsa_sequence_create");
  /* The caller's copies may go: the sequence copied them. */
  for (k = 0; k < num_weights; ++k) {
    memset(weight_data[k], 0xff, weights[k].size_bytes);
    free(weight_data[k]);
    free(weight_shapes[k]);
  }
  dsa_library_release(library); /* the sequence keeps the library loaded */
  library = NULL;

  die_on(dsa_sequence_state_info(sequence, 0, &ring_info), "dsa_sequence_state_info");
  ring_count = elements(ring_info.value.shape, ring_info.value.rank);
  check(ring_info.value.dtype == DSA_DTYPE_BF16 && ring_info.value.rank == 2 && !ring_info.init_neg_inf,
        "the ring is a bf16 [W, head_dim] state starting at zeros");
  ring = (uint16_t *)calloc(ring_count, 2);
  ring_after = (uint16_t *)calloc(ring_count, 2);

  for (r = 0; r < 3; ++r) {
    int64_t start_pos, tokens, position, shape[2];
    const float *attn_in;
    size_t count, i;
    uint16_t *x, *y;
    float *y32;
    dsa_buffer_t xb, yb;
    char what[256];
    if (golden_oracle_regime(oracle, regimes[r], &start_pos, &tokens) != 0 ||
        golden_oracle_full_capture(oracle, regimes[r], "L0.attn_in", &attn_in, &count, err, sizeof err) != 0) {
      fprintf(stderr, "CApiGoldenTest: %s: %s\n", regimes[r], err);
      return 2;
    }
    shape[0] = tokens;
    shape[1] = dim;
    x = (uint16_t *)malloc(count * 2);
    y = (uint16_t *)malloc(count * 2);
    y32 = (float *)malloc(count * 4);
    for (i = 0; i < count; ++i)
      x[i] = f32_to_bf16(attn_in[i]);
    xb.data = x;
    xb.size_bytes = count * 2;
    xb.dtype = DSA_DTYPE_BF16;
    xb.rank = 2;
    xb.shape = shape;
    yb = xb;
    yb.data = y;

    if (r == 2) {
      /* A step out of order (start_pos 0 again) fails and changes nothing. */
      dsa_status_t s;
      die_on(dsa_sequence_read_state(sequence, 0, &(dsa_buffer_t){ring, ring_count * 2, DSA_DTYPE_BF16, 2,
                                                                  ring_info.value.shape}),
             "dsa_sequence_read_state");
      s = dsa_sequence_step(sequence, &xb, 0, NULL, &yb);
      check(dsa_status_code(s) == DSA_STATUS_INVALID_ARGUMENT && strstr(dsa_status_message(s), "start_pos") != NULL,
            "an out-of-order step is refused (INVALID_ARGUMENT naming start_pos)");
      dsa_status_free(s);
      die_on(dsa_sequence_read_state(sequence, 0, &(dsa_buffer_t){ring_after, ring_count * 2, DSA_DTYPE_BF16, 2,
                                                                  ring_info.value.shape}),
             "dsa_sequence_read_state");
      die_on(dsa_sequence_position(sequence, &position), "dsa_sequence_position");
      check(position == start_pos && memcmp(ring, ring_after, ring_count * 2) == 0,
            "after the refused step the position and the ring are unchanged");
    }
    /* decode12 at the sequence's own position, the others at their explicit start_pos. */
    die_on(dsa_sequence_step(sequence, &xb, r == 1 ? DSA_START_POS_NEXT : start_pos, NULL, &yb), "dsa_sequence_step");
    die_on(dsa_sequence_position(sequence, &position), "dsa_sequence_position");
    snprintf(what, sizeof what, "%s: position %lld after the step", regimes[r], (long long)position);
    check(position == start_pos + tokens, what);
    for (i = 0; i < count; ++i)
      y32[i] = bf16_to_f32(y[i]);
    verdict(golden_oracle_compare_bf16(oracle, regimes[r], "L0.attn_out", y32, shape, 2, line, sizeof line), line);
    free(x);
    free(y);
    free(y32);
  }

  /* The ring after decode13 against the golden's window cache. */
  {
    float *ring32 = (float *)malloc(ring_count * 4);
    size_t i;
    die_on(dsa_sequence_read_state(sequence, 0, &(dsa_buffer_t){ring, ring_count * 2, DSA_DTYPE_BF16, 2,
                                                                ring_info.value.shape}),
           "dsa_sequence_read_state");
    for (i = 0; i < ring_count; ++i)
      ring32[i] = bf16_to_f32(ring[i]);
    verdict(golden_oracle_compare_bf16(oracle, "decode13", "L0.sa_kv", ring32, ring_info.value.shape, 2, line,
                                       sizeof line),
            line);
    free(ring32);
  }
  free(ring);
  free(ring_after);
  dsa_sequence_release(sequence);
  golden_oracle_close(oracle);
  printf("c api golden: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
