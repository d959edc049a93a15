/*===- main.c - a step library run from C through the runtime's C API (dsa-c/runtime.h) ----------------------===*
 *
 * Usage: dsa-c-api-example DIR/attention_L0.json   (what `dsa-run --golden G --emit-libraries=DIR` writes)
 *
 * Opens the step library, prints its first function's signature, creates a sequence with every weight a small
 * constant, runs a 3-token prefill and two decode steps (the second at the sequence's own position) on constant
 * tokens, and prints each step's output shape, how many output values are finite, and the state tensors. A layer
 * with shared slots (a compressed layer) gets a slot set. Exit status 1 with the runtime's message on an error.
 *
 *===----------------------------------------------------------------------------------------------------------===*/
#include "common.h"

#include <math.h>

/* Every weight a small constant (a real caller passes its checkpoint's). */
static float constant_weight(size_t arg, size_t i) {
  (void)arg;
  (void)i;
  return 0.015625f;
}

int main(int argc, char **argv) {
  dsa_library_t *library = NULL;
  dsa_sequence_t *sequence = NULL;
  dsa_slots_t *slots = NULL;
  dsa_function_info_t info;
  dsa_value_info_t x_info, out_info;
  const char *function, *backend, *target;
  size_t k, num_state;
  int64_t tokens[3] = {3, 1, 1};
  int step, status = 1;

  if (argc != 2) {
    fprintf(stderr, "usage: %s STEP_LIBRARY.json\n", argv[0]);
    return 2;
  }
  printf("DSA C API version %u (header %d)\n", dsa_c_api_version(), DSA_C_API_VERSION);
  if (failed(dsa_library_open(DSA_C_API_VERSION, argv[1], &library)) ||
      failed(dsa_library_backend(library, &backend, &target)) ||
      failed(dsa_library_function_name(library, 0, &function)) ||
      failed(dsa_function_info(library, function, &info)))
    goto done;
  printf("@%s (%s, %s): %zu arguments, %zu weights, %zu state, %zu shared slots, max_seq_len %lld, chunks %s\n",
         function, backend, target, info.num_args, info.num_weights, info.num_state, info.num_shared,
         (long long)info.max_seq_len, info.chunked ? "in one call" : (info.num_shared ? "refused" : "split"));
  if (info.x_arg < 0) {
    fprintf(stderr, "error: @%s has no step roles (not a dsa.attention layer)\n", function);
    goto done;
  }

  if (!(sequence = create_sequence(library, function, constant_weight)))
    goto done;
  if (info.num_shared > 0 && failed(dsa_slots_create(library, function, &slots)))
    goto done;
  if (failed(dsa_function_arg(library, function, (size_t)info.x_arg, &x_info)) ||
      failed(dsa_function_result(library, function, (size_t)info.output_result, &out_info)))
    goto done;

  for (step = 0; step < 3; ++step) {
    int64_t x_shape[DSA_MAX_RANK], out_shape[DSA_MAX_RANK], position;
    size_t x_n, out_n, i, finite = 0;
    void *x, *y;
    dsa_buffer_t xb, yb;
    memcpy(x_shape, x_info.shape, sizeof x_shape);
    memcpy(out_shape, out_info.shape, sizeof out_shape);
    x_shape[0] = out_shape[0] = tokens[step];
    x_n = count_of(x_shape, x_info.rank);
    out_n = count_of(out_shape, out_info.rank);
    x = malloc(x_n * dsa_dtype_size(x_info.dtype));
    y = malloc(out_n * dsa_dtype_size(out_info.dtype));
    for (i = 0; i < x_n; ++i)
      store(x, x_info.dtype, i, 0.5f);
    xb.data = x;
    xb.size_bytes = x_n * dsa_dtype_size(x_info.dtype);
    xb.dtype = x_info.dtype;
    xb.rank = x_info.rank;
    xb.shape = x_shape;
    yb.data = y;
    yb.size_bytes = out_n * dsa_dtype_size(out_info.dtype);
    yb.dtype = out_info.dtype;
    yb.rank = out_info.rank;
    yb.shape = out_shape;
    if (failed(dsa_sequence_position(sequence, &position)) ||
        failed(dsa_sequence_step(sequence, &xb, step == 2 ? DSA_START_POS_NEXT : position, slots, &yb))) {
      free(x);
      free(y);
      goto done;
    }
    for (i = 0; i < out_n; ++i) {
      float f;
      if (out_info.dtype == DSA_DTYPE_BF16) {
        uint32_t u = (uint32_t)((uint16_t *)y)[i] << 16;
        memcpy(&f, &u, 4);
      } else {
        f = ((float *)y)[i];
      }
      finite += isfinite(f) ? 1 : 0;
    }
    printf("step at start_pos %lld: %lld tokens -> output %lldx%lld %s, %zu of %zu values finite\n",
           (long long)position, (long long)tokens[step], (long long)out_shape[0], (long long)out_shape[1],
           dsa_dtype_name(out_info.dtype), finite, out_n);
    free(x);
    free(y);
  }

  if (failed(dsa_sequence_state_count(sequence, &num_state)))
    goto done;
  for (k = 0; k < num_state; ++k) {
    dsa_state_info_t s;
    void *buffer;
    dsa_buffer_t b;
    size_t n;
    if (failed(dsa_sequence_state_info(sequence, k, &s)))
      goto done;
    n = count_of(s.value.shape, s.value.rank);
    buffer = malloc(n * dsa_dtype_size(s.value.dtype) + 1);
    b.data = buffer;
    b.size_bytes = n * dsa_dtype_size(s.value.dtype);
    b.dtype = s.value.dtype;
    b.rank = s.value.rank;
    b.shape = s.value.shape;
    if (failed(dsa_sequence_read_state(sequence, k, &b))) {
      free(buffer);
      goto done;
    }
    printf("state %s: argument #%zu %s\n", s.name, s.arg, s.value.type);
    free(buffer);
  }
  status = 0;
done:
  dsa_slots_release(slots);
  dsa_sequence_release(sequence);
  dsa_library_release(library);
  return status;
}
