/*===- dsa-c/runtime.h - the C API of dsa's MLIR-free runtime (versioned, C99) -------------------------------===*
 *
 * Runs AOT step libraries (what `dsa-run --golden G --emit-libraries=DIR` or the compiler's emitCPUStepLibrary
 * writes: <base>.json, the step description, next to <base>.so) from C or any language with a C FFI: open a
 * library, query its functions' signatures, create a sequence (one sequence's resident state: a layer's window ring,
 * compressor state and caches) with its weights bound, run steps on caller-owned buffers, read the state back.
 * Library: libdsa_runtime_c.so (CMake target DSA::RuntimeC of the installed package); it needs no MLIR.
 *
 * The C API is a thin layer over the C++ runtime (dsa/Runtime/Host/Sequence.h, dsa/Runtime/CPU/StepLibrary.h,
 * dsa/Runtime/Cuda/GpuStepLibrary.h): every check of a step (x's type and shape, start_pos, the capacity
 * max_seq_len, the shared slots) and every run-time check of the compiled code is the C++ runtime's, reported here
 * with its message.
 *
 * Versioning. DSA_C_API_VERSION is the version of this header; dsa_c_api_version() returns the library's. They
 * differ when a program runs against a libdsa_runtime_c.so built from another header. dsa_library_open takes the
 * caller's DSA_C_API_VERSION and refuses any other version (DSA_STATUS_VERSION_MISMATCH); every other handle comes
 * from an opened library, so one check covers the session. A change of any declaration here changes the version.
 *
 * Errors. Every fallible function returns a dsa_status_t: NULL on success, else a status the caller owns and frees
 * with dsa_status_free, with a code (dsa_status_code) and a message (dsa_status_message) that names the bad
 * argument or field, e.g. "dsa_sequence_step: sequence @attention_L0: x: shape [3, 32], expected
 * tensor<?x64xbf16> (dimension 1)". Nothing throws across this boundary (C++ exceptions, allocation failures included, become
 * statuses). Output parameters are written only on success. A failed call changes nothing: a failed step leaves
 * the sequence's position, state and shared slots as they were.
 *
 * Buffers. A dsa_buffer_t describes caller-owned memory: a row-major, contiguous tensor of `dtype` with `rank`
 * dimensions `shape[0..rank)` in the compiled code's element format (bf16 as its 16-bit pattern, f32 IEEE binary32,
 * i1 one byte 0/1, i32 4 bytes, i64 and index 8 bytes, host byte order). `size_bytes` is how many bytes `data`
 * holds; it must be at least the tensor's bytes (product of shape * dsa_dtype_size). The library never keeps a
 * pointer into a caller's buffer past the call: inputs are read (weights copied) during it, outputs written during
 * it. A scalar is rank 0 (shape may be NULL). Before anything runs, every buffer is checked: data not NULL (unless
 * the tensor has no elements), rank in 0..DSA_MAX_RANK, shape not NULL for rank > 0, dimensions >= 0, the byte size
 * not overflowing and within size_bytes, then dtype / rank / static dimensions against the function's signature.
 *
 * Ownership. Handles are opaque. dsa_library_t: from dsa_library_open, freed by dsa_library_release; sequences,
 * batches and slot sets keep their library loaded, so it may be released before them. Strings returned by query functions
 * (names, type spellings) belong to the library and stay valid while its handle or any of its sequences or slot
 * sets lives (a state's name: while its sequence lives). dsa_sequence_t / dsa_batch_t / dsa_slots_t: freed by
 * their release.
 * Release functions accept NULL.
 *
 * Thread-safety. A library handle may be used from any number of threads at once (queries, sequence creation, and
 * steps of distinct sequences run concurrently on a CPU step library; a GPU step library: one thread at a time). A
 * sequence, a batch or a slot set is used by one thread at a time (the caller serialises). Statuses are plain values.
 *
 * Shapes, dtypes and units of a step (a function around one dsa.attention layer, "step roles"): x [s, dim] of the
 * layer's activation type (bf16), s >= 1 token rows; start_pos is the position (in tokens) of x's first row, i64;
 * the output is [s, dim] (bf16); a step needs start_pos + s <= max_seq_len (the capacity in positions, -1: none).
 * A multi-token step at start_pos > 0 (a chunk) is defined as s single-token steps (attention-semantics.md section
 * 13): a function whose dsa_function_info_t::chunked is 1 runs it as one call with the same bits (a window-only layer,
 * or a compressed layer that reads only the slots it publishes itself, of a CPU step library); otherwise a layer
 * without shared slots runs it as s calls and a layer with shared slots refuses it through dsa_sequence_step: run
 * such a chunk through the whole stack with a plan (dsa_stack_plan_create, "Chunks through a stack" below), or feed
 * the tokens one at a time through every layer of the model.
 *
 *===----------------------------------------------------------------------------------------------------------===*/
#ifndef DSA_C_RUNTIME_H
#define DSA_C_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define DSA_C_EXPORT __attribute__((visibility("default")))
#else
#define DSA_C_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Version -------------------------------------------------------------------------------------------------- */

/** The version of this header (the ABI). Pass it to dsa_library_open. */
#define DSA_C_API_VERSION 4

/** The version the loaded libdsa_runtime_c implements. */
DSA_C_EXPORT uint32_t dsa_c_api_version(void);

/* ---- Status --------------------------------------------------------------------------------------------------- */

typedef enum dsa_status_code_e {
  DSA_STATUS_OK = 0,
  DSA_STATUS_INVALID_ARGUMENT = 1,    /**< a bad argument: NULL pointer, buffer of the wrong dtype/rank/shape/size,
                                           a step the sequence refuses (x, start_pos, shared), an unknown index */
  DSA_STATUS_NOT_FOUND = 2,           /**< no such file or function (the message lists the library's functions) */
  DSA_STATUS_VERSION_MISMATCH = 3,    /**< the caller's DSA_C_API_VERSION is not the library's */
  DSA_STATUS_OUT_OF_RANGE = 4,        /**< a step past the sequence's capacity (max_seq_len) */
  DSA_STATUS_FAILED_PRECONDITION = 5, /**< the function cannot be used so (no step roles, dynamic output dims) */
  DSA_STATUS_UNAVAILABLE = 6,         /**< a library that does not load: bad description, missing CPU features,
                                           loader error, no CUDA driver or device for a GPU step library */
  DSA_STATUS_RUN_FAILED = 7,          /**< the compiled code's run-time check failed during a step */
  DSA_STATUS_RESOURCE_EXHAUSTED = 8,  /**< out of memory */
  DSA_STATUS_INTERNAL = 9             /**< anything else (a bug: please report the message) */
} dsa_status_code_t;

/** NULL: success. Otherwise owned by the caller: free it with dsa_status_free. */
typedef struct dsa_status_s *dsa_status_t;

/** The code of `status`; DSA_STATUS_OK for NULL. */
DSA_C_EXPORT dsa_status_code_t dsa_status_code(dsa_status_t status);
/** The message of `status` (NUL-terminated, valid until dsa_status_free); "" for NULL. */
DSA_C_EXPORT const char *dsa_status_message(dsa_status_t status);
/** "OK", "INVALID_ARGUMENT", ... for a code. */
DSA_C_EXPORT const char *dsa_status_code_name(dsa_status_code_t code);
/** Frees `status` (NULL: nothing). */
DSA_C_EXPORT void dsa_status_free(dsa_status_t status);

/* ---- Element types and buffers -------------------------------------------------------------------------------- */

typedef enum dsa_dtype_e {
  DSA_DTYPE_BF16 = 1,  /**< 2 bytes: the upper half of an IEEE binary32 */
  DSA_DTYPE_F32 = 2,   /**< 4 bytes */
  DSA_DTYPE_I1 = 3,    /**< 1 byte, 0 or 1 */
  DSA_DTYPE_I32 = 4,   /**< 4 bytes */
  DSA_DTYPE_I64 = 5,   /**< 8 bytes */
  DSA_DTYPE_INDEX = 6  /**< 8 bytes (MLIR's index on a 64-bit host) */
} dsa_dtype_t;

/** Bytes of one element of `dtype`; 0 for a value that is no dtype. */
DSA_C_EXPORT size_t dsa_dtype_size(dsa_dtype_t dtype);
/** "bf16", "f32", "i1", "i32", "i64", "index"; "?" for a value that is no dtype. */
DSA_C_EXPORT const char *dsa_dtype_name(dsa_dtype_t dtype);

/** The largest rank of a value of a compiled function. */
#define DSA_MAX_RANK 16

/** A caller-owned tensor (see "Buffers" above). */
typedef struct dsa_buffer_s {
  void *data;           /**< row-major elements; read for inputs, written for outputs */
  size_t size_bytes;    /**< bytes available at data */
  dsa_dtype_t dtype;
  int32_t rank;         /**< 0 .. DSA_MAX_RANK */
  const int64_t *shape; /**< rank dimensions (NULL allowed for rank 0) */
} dsa_buffer_t;

/* ---- Libraries and function signatures ------------------------------------------------------------------------ */

typedef struct dsa_library_s dsa_library_t;
typedef struct dsa_sequence_s dsa_sequence_t;
/** The shared slots (compress_kv, index_k, topk_idxs, candidates) that the compressed layers of one model read and
 *  publish, passed to every layer's step in order (dsa_slots_create). */
typedef struct dsa_slots_s dsa_slots_t;
/** Many sequences' decode steps through one batched step function (dsa_batch_create). */
typedef struct dsa_batch_s dsa_batch_t;

/** Opens the step library described by `description_path` (the .json; its "library" field names the .so,
 *  relative to the .json's folder). CPU step libraries ("format": "dsa-cpu-step-library"): the host's CPU features
 *  are checked first (DSA_STATUS_UNAVAILABLE naming the missing ones). GPU step libraries
 *  ("dsa-gpu-step-library"): run on CUDA device 0 through the dlopen'd driver, weights uploaded once per sequence,
 *  the state copied through the host between steps; a process opens one GPU step library file at a time; the
 *  process must have libdsa_runtime_c's mgpu* symbols in its global scope (linked, or dlopen'ed RTLD_GLOBAL).
 *  Errors: DSA_STATUS_VERSION_MISMATCH (api_version != the library's), DSA_STATUS_INVALID_ARGUMENT (NULL),
 *  DSA_STATUS_NOT_FOUND (no such file), DSA_STATUS_UNAVAILABLE (a bad description, naming the field; a library that
 *  does not load). */
DSA_C_EXPORT dsa_status_t dsa_library_open(uint32_t api_version, const char *description_path,
                                           dsa_library_t **out_library);
/** Releases the caller's reference (NULL: nothing); the library stays loaded while a sequence or slot set of it
 *  lives. */
DSA_C_EXPORT void dsa_library_release(dsa_library_t *library);

/** "cpu" or "cuda" (the library's backend), and its target ("x86-64-v3", "sm_90", ...). Owned by the library. */
DSA_C_EXPORT dsa_status_t dsa_library_backend(const dsa_library_t *library, const char **out_backend,
                                              const char **out_target);
/** The number of functions, and function `index`'s name (owned by the library). */
DSA_C_EXPORT dsa_status_t dsa_library_function_count(const dsa_library_t *library, size_t *out_count);
DSA_C_EXPORT dsa_status_t dsa_library_function_name(const dsa_library_t *library, size_t index,
                                                    const char **out_name);

/** What an argument of a step function is for a sequence. */
typedef enum dsa_arg_role_e {
  DSA_ARG_WEIGHT = 0,    /**< bound once at dsa_sequence_create (every argument that is none of the below) */
  DSA_ARG_X = 1,         /**< the step's token rows (dsa_sequence_step's x) */
  DSA_ARG_START_POS = 2, /**< the step's first position (dsa_sequence_step's start_pos) */
  DSA_ARG_STATE = 3,     /**< resident state the sequence owns (ring, compressor state, caches) */
  DSA_ARG_SHARED = 4     /**< a shared slot between layers (dsa_slots_t) */
} dsa_arg_role_t;

/** An argument or result of a function. */
typedef struct dsa_value_info_s {
  int32_t is_tensor;             /**< 0: a scalar (rank 0) */
  dsa_dtype_t dtype;
  int32_t rank;
  int64_t shape[DSA_MAX_RANK];   /**< static sizes, -1 for a dynamic dimension (the token rows) */
  const char *type;              /**< MLIR's spelling, e.g. "tensor<?x64xbf16>" (owned by the library) */
  dsa_arg_role_t role;           /**< arguments only (results: DSA_ARG_WEIGHT) */
} dsa_value_info_t;

/** A function's signature in brief. Indices are -1 where absent (a function without step roles). */
typedef struct dsa_function_info_s {
  size_t num_args;
  size_t num_results;    /**< the function's own results (probes kept as results are not counted) */
  int64_t x_arg;         /**< argument index of x */
  int64_t start_pos_arg; /**< argument index of start_pos */
  int64_t output_result; /**< result index of the step's output */
  int64_t max_seq_len;   /**< capacity in positions; -1: none */
  size_t num_weights;    /**< arguments with role DSA_ARG_WEIGHT */
  size_t num_state;      /**< state tensors (dsa_sequence_state_info) */
  size_t num_shared;     /**< shared slots (0: the layer takes no dsa_slots_t) */
  int32_t chunked;       /**< 1: a multi-token step at start_pos > 0 is one call of the compiled code (the same bits as
                              its 1-token steps); 0: it is split into 1-token calls, or refused when num_shared > 0
                              (added in API version 3) */
} dsa_function_info_t;

/** The signature of function `function`. Errors: NULL arguments, DSA_STATUS_NOT_FOUND (lists the functions). */
DSA_C_EXPORT dsa_status_t dsa_function_info(const dsa_library_t *library, const char *function,
                                            dsa_function_info_t *out_info);
/** Argument / result `index` of `function`. Errors: as dsa_function_info, an index past the count. */
DSA_C_EXPORT dsa_status_t dsa_function_arg(const dsa_library_t *library, const char *function, size_t index,
                                           dsa_value_info_t *out_info);
DSA_C_EXPORT dsa_status_t dsa_function_result(const dsa_library_t *library, const char *function, size_t index,
                                              dsa_value_info_t *out_info);

/* ---- Sequences ------------------------------------------------------------------------------------------------ */

/** A new sequence (position 0) of step function `function`: its state starts as the description says (zeros, the
 *  compressor's score state -inf), the weights are bound: `weights[i]` is argument `weight_args[i]`, every
 *  DSA_ARG_WEIGHT argument exactly once (copied: the caller may free them on return). Errors
 *  (DSA_STATUS_INVALID_ARGUMENT unless said): NULL arguments; DSA_STATUS_NOT_FOUND; DSA_STATUS_FAILED_PRECONDITION
 *  (no step roles, a state without a static shape, an output with dynamic dimensions past the first); a weight
 *  index that is no weight argument, repeated, or missing; a weight buffer that fails the buffer checks or does not
 *  match its argument ("weights[2] (argument #5): ..."). */
DSA_C_EXPORT dsa_status_t dsa_sequence_create(dsa_library_t *library, const char *function, size_t num_weights,
                                              const size_t *weight_args, const dsa_buffer_t *weights,
                                              dsa_sequence_t **out_sequence);
/** Frees the sequence and its state (NULL: nothing). */
DSA_C_EXPORT void dsa_sequence_release(dsa_sequence_t *sequence);

/** dsa_sequence_step's start_pos meaning "the sequence's next position" (dsa_sequence_position). */
#define DSA_START_POS_NEXT INT64_MIN

/** Runs the tokens `x` ([s, ...], s >= 1) at positions start_pos .. start_pos + s - 1 (DSA_START_POS_NEXT: the
 *  sequence's position) and writes the step's output rows ([s, ...], the output result's dtype) to `output` (NULL:
 *  not written). `shared`: the model's shared slots, required iff the function has some (num_shared > 0): read,
 *  then replaced by what this layer published; NULL otherwise. On success the position becomes start_pos + s.
 *  Errors, each leaving position, state and slots unchanged: NULL sequence / x; a buffer check of x or output
 *  (output's shape must be [s, <the output's static dims>]); the C++ sequence's: "x: ..." (dtype, rank, static size,
 *  no rows), "start_pos: ..." (negative, not the next position, overflow), "shared: ..." (missing, given to a
 *  layer without slots, a multi-token step at start_pos > 0 of a layer with slots): DSA_STATUS_INVALID_ARGUMENT;
 *  "max_seq_len: ..." (DSA_STATUS_OUT_OF_RANGE); the compiled code's failed run-time check (DSA_STATUS_RUN_FAILED). */
DSA_C_EXPORT dsa_status_t dsa_sequence_step(dsa_sequence_t *sequence, const dsa_buffer_t *x, int64_t start_pos,
                                            dsa_slots_t *shared, const dsa_buffer_t *output);

/** The next position a step starts at (tokens consumed so far). */
DSA_C_EXPORT dsa_status_t dsa_sequence_position(const dsa_sequence_t *sequence, int64_t *out_position);
/** Back to position 0 and the initial state. */
DSA_C_EXPORT dsa_status_t dsa_sequence_reset(dsa_sequence_t *sequence);

/** One state tensor of a sequence. */
typedef struct dsa_state_info_s {
  const char *name;      /**< "state<k>" (k = index; the description names no state), owned by the sequence */
  size_t arg;            /**< the function argument it is */
  size_t result;         /**< the result that updates it */
  int32_t init_neg_inf;  /**< 1: starts at -inf (the compressor's score state), 0: zeros */
  dsa_value_info_t value;/**< dtype and (static) shape */
} dsa_state_info_t;

/** The number of state tensors (as dsa_function_info's num_state). */
DSA_C_EXPORT dsa_status_t dsa_sequence_state_count(const dsa_sequence_t *sequence, size_t *out_count);
/** State tensor `index` (0 .. count-1), in argument order. */
DSA_C_EXPORT dsa_status_t dsa_sequence_state_info(const dsa_sequence_t *sequence, size_t index,
                                                  dsa_state_info_t *out_info);
/** Copies state tensor `index` as it stands after the last successful step into `dst` (dtype and shape exactly
 *  the state's). */
DSA_C_EXPORT dsa_status_t dsa_sequence_read_state(const dsa_sequence_t *sequence, size_t index,
                                                  const dsa_buffer_t *dst);

/* ---- Batched decode ------------------------------------------------------------------------------------------- */

/* A batched step function is a dsa.attention whose start_pos is a tensor<B x i64> (window-only layers; a library of
 * e.g. test/Tools/Inputs/batched-window-layer.mlir): x [B, 1, dim] (bf16), one token per sequence at its own
 * position, ring [B, window_size, head_dim], output [B, 1, dim]. A batch holds its members' rings and positions and
 * runs ONE call of the function per step for all of them; each output row equals that sequence's own batch-1 step,
 * bit for bit (attention-semantics.md section 13). Sequences join between steps with a ring [window_size, head_dim]
 * and the position of their next token (e.g. a dsa_sequence_t of the batch-1 layer after its prefill:
 * dsa_sequence_read_state and dsa_sequence_position) and leave with theirs. The C API is a thin layer over the C++
 * runtime::Batch (dsa/Runtime/Host/Batch.h), which makes every check of a join, leave and step. A failed call changes
 * nothing: members, their rings and positions stay as they were. CPU step libraries only. */

/** Member ids: assigned by dsa_batch_join, never reused within a batch. */
typedef int64_t dsa_batch_id_t;

/** A new batch (no members) of batched step function `function` of a CPU step library, the weights bound as in
 *  dsa_sequence_create (`weights[i]` is argument `weight_args[i]`, every DSA_ARG_WEIGHT argument exactly once,
 *  copied). Errors (DSA_STATUS_INVALID_ARGUMENT unless said): NULL arguments; DSA_STATUS_NOT_FOUND; the weight
 *  errors of dsa_sequence_create; DSA_STATUS_FAILED_PRECONDITION: a GPU step library, or a function that is not a
 *  batched step function ("start_pos: ... is not a tensor<B x i64>" for a batch-1 layer: use dsa_sequence_create;
 *  no step roles; not exactly one state, the ring [?, W, hd]; shared slots). */
DSA_C_EXPORT dsa_status_t dsa_batch_create(dsa_library_t *library, const char *function, size_t num_weights,
                                           const size_t *weight_args, const dsa_buffer_t *weights,
                                           dsa_batch_t **out_batch);
/** Frees the batch and its members' rings (NULL: nothing). */
DSA_C_EXPORT void dsa_batch_release(dsa_batch_t *batch);

/** Adds a sequence whose next token is at `position` (>= 0) with `ring` ([window_size, head_dim] of the ring's dtype,
 *  copied); writes its id. It becomes the last member (its row is the last of the next step's x). Errors: NULL;
 *  a buffer check of ring; "ring: ..." (dtype or shape), "position: ..." (negative): DSA_STATUS_INVALID_ARGUMENT. */
DSA_C_EXPORT dsa_status_t dsa_batch_join(dsa_batch_t *batch, const dsa_buffer_t *ring, int64_t position,
                                         dsa_batch_id_t *out_id);
/** Removes member `id`, writing its ring after its last step to `ring` (NULL: not written; else dtype and shape
 *  exactly the ring's [window_size, head_dim]) and its next position to `out_position` (NULL: not written). The
 *  members after it move up one row. Errors: NULL batch; "sequence <id>: not a member"; a buffer check or a dtype /
 *  shape mismatch of ring (DSA_STATUS_INVALID_ARGUMENT; the member stays). */
DSA_C_EXPORT dsa_status_t dsa_batch_leave(dsa_batch_t *batch, dsa_batch_id_t id, const dsa_buffer_t *ring,
                                          int64_t *out_position);

/** One decode step of every member: `x` [B, 1, dim] with B the member count (>= 1), row b for member b
 *  (dsa_batch_member); writes `output` [B, 1, dim] (the output's dtype; NULL: not written). Every member's position
 *  advances by one. Errors: NULL batch / x; a buffer check of x or output (output's shape must be x's B with the
 *  output's static dims); "x: ..." (dtype, rank, shape, B not the member count, no members), "start_pos: ..." (a
 *  position + 1 overflowing int64): DSA_STATUS_INVALID_ARGUMENT; the compiled code's failed run-time check
 *  (DSA_STATUS_RUN_FAILED). */
DSA_C_EXPORT dsa_status_t dsa_batch_step(dsa_batch_t *batch, const dsa_buffer_t *x, const dsa_buffer_t *output);

/** The number of members, and member `index`'s id (index < count: the order of a step's rows, join order). */
DSA_C_EXPORT dsa_status_t dsa_batch_member_count(const dsa_batch_t *batch, size_t *out_count);
DSA_C_EXPORT dsa_status_t dsa_batch_member(const dsa_batch_t *batch, size_t index, dsa_batch_id_t *out_id);
/** Member `id`'s next position. Errors: NULL; "sequence <id>: not a member" (DSA_STATUS_INVALID_ARGUMENT). */
DSA_C_EXPORT dsa_status_t dsa_batch_position(const dsa_batch_t *batch, dsa_batch_id_t id, int64_t *out_position);
/** Copies member `id`'s ring as it stands into `dst` (dtype and shape exactly the ring's [window_size, head_dim]).
 *  Errors: NULL; not a member; a buffer check or mismatch of dst (DSA_STATUS_INVALID_ARGUMENT). */
DSA_C_EXPORT dsa_status_t dsa_batch_read_ring(const dsa_batch_t *batch, dsa_batch_id_t id, const dsa_buffer_t *dst);

/* ---- Chunks through a stack of layers sharing slots (added in API version 4) ----------------------------------- */

/* A multi-token step at start_pos > 0 (a chunk) through a model's layers is DEFINED as its tokens fed one decode step
 * at a time through every layer (attention-semantics.md section 13). A model driver runs it LAYER-MAJOR instead: each
 * layer once over all the chunk's rows, the model's own computation between the layers (norms, MoE, ...) done by the
 * caller on those rows. Layers that read slots other layers publish (the index_k quirk of section 8, another layer's
 * candidates) agree with token-by-token decode that way only where every read of a slot sees the same data in both
 * orders; a plan (the C++ runtime::planStackChunk, dsa/Runtime/Host/StackChunk.h) cuts the chunk into PIECES that do,
 * and says which index_k each layer of a piece must read (the slot as it entered the piece, or what an earlier
 * layer returned in it), which dsa_stack_piece_step sets. Per piece p, in order:
 *
 *   dsa_stack_piece_begin(plan, p, slots);
 *   for (l = 0; l < num_layers; ++l)       (h: the piece's rows of layer l's input, the caller's between layers)
 *     dsa_stack_piece_step(plan, p, l, &h_l, slots, &out_l);
 *   dsa_stack_piece_finish(plan, p, slots);
 *
 * Every layer's output rows then equal, bit for bit, what the tokens give fed one at a time through the stack. The
 * plan keeps the layers' sequence handles (not owned: they must outlive the plan) and its progress (which pieces and
 * layers have run); a refused call changes neither the plan's progress, the sequences nor the slots. Window-only
 * layers (no slots) are stepped the same way (one call of their compiled code when dsa_function_info_t::chunked).
 * A prefill (start_pos 0) or a one-token step needs no plan: dsa_sequence_step through every layer. */
typedef struct dsa_stack_plan_s dsa_stack_plan_t;

/** The plan of `tokens` tokens at `start_pos` through `layers[0 .. num_layers)` (every attention layer of the model,
 *  in stack order; each at position start_pos) for a model whose prefill was `prefill_tokens` tokens (the slots'
 *  history). Errors (DSA_STATUS_INVALID_ARGUMENT unless said): NULL arguments, num_layers 0, a NULL or repeated
 *  layer; "tokens: ..." (< 1), "prefill_tokens: ..." (outside 1 .. start_pos); a layer not at position start_pos
 *  ("layers[l]: ..."); DSA_STATUS_OUT_OF_RANGE: start_pos + tokens past a layer's max_seq_len ("layers[l]:
 *  max_seq_len: ...", checked here so that no piece stops half-way through the stack on it);
 *  DSA_STATUS_FAILED_PRECONDITION: a layer whose library records no dsa.attention configuration,
 *  a layer reading topk_idxs or candidates that no earlier layer of the stack publishes (step such a model one token
 *  at a time). */
DSA_C_EXPORT dsa_status_t dsa_stack_plan_create(dsa_sequence_t *const *layers, size_t num_layers,
                                                int64_t prefill_tokens, int64_t start_pos, int64_t tokens,
                                                dsa_stack_plan_t **out_plan);
/** Frees the plan (NULL: nothing); the sequences stay the caller's. */
DSA_C_EXPORT void dsa_stack_plan_release(dsa_stack_plan_t *plan);

/** The number of pieces (>= 1), and piece `piece`'s tokens [first, first + count) of the chunk (positions
 *  start_pos + first ..). Errors: NULL; a piece past the count. */
DSA_C_EXPORT dsa_status_t dsa_stack_plan_piece_count(const dsa_stack_plan_t *plan, size_t *out_count);
DSA_C_EXPORT dsa_status_t dsa_stack_plan_piece(const dsa_stack_plan_t *plan, size_t piece, int64_t *out_first,
                                               int64_t *out_count);

/** Starts piece `piece`: records the index_k slot of `shared` as the piece enters it. `shared`: the model's slots
 *  (required iff a layer of the stack has shared slots; NULL otherwise), the same set for every call of the piece.
 *  Errors (DSA_STATUS_INVALID_ARGUMENT; nothing changes): NULL plan; a piece past the count; "piece: ..." (not the
 *  next piece: pieces run in order, each once, after the previous one finished); "shared: ..." (missing, given to a
 *  stack without slots, slots of another shape). */
DSA_C_EXPORT dsa_status_t dsa_stack_piece_begin(dsa_stack_plan_t *plan, size_t piece, const dsa_slots_t *shared);
/** Runs layer `layer` of piece `piece` (begun, every layer before it run in the piece) on `x` (the piece's rows of
 *  this layer's input: [count, dim], the layer's x dtype) at position start_pos + first as ONE call (a layer with
 *  shared slots: index_k set as the plan says, then the slots replaced by what the layer published), and writes the
 *  output rows to `output` ([count, dim] of the output's dtype; NULL: not written). Errors, each changing nothing:
 *  NULL plan / x; "piece: ..." (not the one begun), "layer: ..." (past the stack, not the next layer of the piece);
 *  "shared: ..." (not the set the piece began with: pass that set to EVERY layer of the piece, a layer without
 *  shared slots included, which does not touch it); a buffer check of x or output, "x: ..." (dtype, shape, rows not
 *  the piece's count): DSA_STATUS_INVALID_ARGUMENT; the sequence's own errors as dsa_sequence_step reports them
 *  (max_seq_len: DSA_STATUS_OUT_OF_RANGE; a failed run-time check of the compiled code: DSA_STATUS_RUN_FAILED, e.g.
 *  a GPU step library, which runs no chunk of a layer with entry_keys). */
DSA_C_EXPORT dsa_status_t dsa_stack_piece_step(dsa_stack_plan_t *plan, size_t piece, size_t layer,
                                               const dsa_buffer_t *x, dsa_slots_t *shared,
                                               const dsa_buffer_t *output);
/** Ends piece `piece` after its last layer: sets the index_k slot of `shared` to what the next step must read (NULL
 *  iff the stack has no slots). Errors (DSA_STATUS_INVALID_ARGUMENT; nothing changes): NULL plan; "piece: ..." (not
 *  the one begun), "layer: ..." (a layer of the piece not run yet), "shared: ..." (not the piece's set). */
DSA_C_EXPORT dsa_status_t dsa_stack_piece_finish(dsa_stack_plan_t *plan, size_t piece, dsa_slots_t *shared);

/* ---- Shared slots between the layers of a model --------------------------------------------------------------- */

/** The empty slots a model starts from, shaped for `function` (a layer with num_shared > 0). Errors: NULL,
 *  DSA_STATUS_NOT_FOUND, DSA_STATUS_FAILED_PRECONDITION (the function has no shared slots). */
DSA_C_EXPORT dsa_status_t dsa_slots_create(const dsa_library_t *library, const char *function,
                                           dsa_slots_t **out_slots);
DSA_C_EXPORT void dsa_slots_release(dsa_slots_t *slots);

#ifdef __cplusplus
}
#endif

#endif /* DSA_C_RUNTIME_H */
