/*===- GoldenOracle.h - the golden's side of the C API's golden test, callable from C ----------------------===*
 *
 * What CApiGoldenTest.c (a C program driving dsa-c/runtime.h) checks against: the tiny golden's regenerated weights
 * (dsa::golden::regenerateWeight, ck-checked) of a layer in the order the step library's manifest
 * (golden_layers.json, written by `dsa-run --golden G --emit-libraries=DIR`) lists them, the golden's full captures
 * (e.g. L0.attn_in) as f32 values, and the verdict of section 12's comparator (dsa::golden::compareCapture) on what
 * the C API produced. Nothing here runs a step: the expectations are the golden's.
 *
 *===----------------------------------------------------------------------------------------------------------===*/
#ifndef DSA_TEST_RUNTIME_CAPI_GOLDENORACLE_H
#define DSA_TEST_RUNTIME_CAPI_GOLDENORACLE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct golden_oracle golden_oracle;

/* Loads the golden and DIR/golden_layers.json. Returns NULL and writes a message to err on failure. */
golden_oracle *golden_oracle_open(const char *golden_path, const char *libraries_dir, char *err, size_t err_len);
void golden_oracle_close(golden_oracle *oracle);

/* The step description (.json) of layer `layer` (owned by the oracle), or NULL. */
const char *golden_oracle_layer_library(const golden_oracle *oracle, int layer);
/* The number of weights of layer `layer` (-1: no such layer), and weight k: its name, its values as f32 (bf16 ones
 * exactly representable) and their count. Returns 0 on success. */
int golden_oracle_num_weights(const golden_oracle *oracle, int layer);
int golden_oracle_weight(golden_oracle *oracle, int layer, int k, const char **name, const float **values,
                         size_t *count, char *err, size_t err_len);

/* The start position and token count of regime `regime`. Returns 0 on success. */
int golden_oracle_regime(const golden_oracle *oracle, const char *regime, int64_t *start_pos, int64_t *tokens);
/* The capture `name` of `regime` stored in full (stride 1), as f32 values; the shape without the batch 1. */
int golden_oracle_full_capture(golden_oracle *oracle, const char *regime, const char *name, const float **values,
                               size_t *count, char *err, size_t err_len);
/* Compares `got` (bf16 values as f32, `rank` dims `shape`) with capture `name` of `regime` by section 12's rule
 * (compareCapture). Returns 1 PASS, 0 otherwise; `line` receives formatVerdict's line. */
int golden_oracle_compare_bf16(const golden_oracle *oracle, const char *regime, const char *name, const float *got,
                               const int64_t *shape, int rank, char *line, size_t line_len);

#ifdef __cplusplus
}
#endif

#endif
