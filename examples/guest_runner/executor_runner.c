/*
 * A stand-in for ExecuTorch's executor_runner that runs on a real (emulated) aarch64 Linux guest: one int8
 * fully-connected layer (int32 accumulation, requantised to int8), the work of a small quantised network, with
 * upstream's output lines (`Model loaded in`, `Iteration i of n: X ms`, `Model executed successfully`, outputs), so
 * fvp-harness scrapes it as it scrapes the real runner.
 *
 * Two builds differ as the driver-reuse change does:
 *   default            every inference creates its buffers: the planned-memory arena (calloc'd, so the kernel
 *                      hands out and zeroes fresh pages) and the packed (transposed) weights;
 *   -DREUSE_BUFFERS    both are created once, at load, and every inference reuses them.
 * The arithmetic is identical, so both builds write the same output bytes (--output_file).
 *
 * The "model" file is a one-line text description: `rows depth columns seed` (rows x depth input, depth x columns
 * weights); weights and input come from a fixed PRNG seeded by it, so no binary model format is needed.
 *
 *   aarch64-linux-gnu-gcc -O2 -static [-DREUSE_BUFFERS] -o executor_runner executor_runner.c
 *   ./executor_runner --model_path=model.txt --num_executions=11 --output_file=out.bin
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ARENA_BYTES (8u << 20) /* the planned-memory arena a method allocator would hand out */

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint32_t rng_state;
static int8_t next_int8(void) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return (int8_t)(rng_state >> 24);
}

static const char *option(int argc, char **argv, const char *name) {
    size_t len = strlen(name);
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], name, len) == 0 && argv[i][len] == '=') return argv[i] + len + 1;
    return NULL;
}

/* weights [depth][columns] -> packed [columns][depth], so the inner loop reads both operands sequentially */
static void pack(const int8_t *weights, int8_t *packed, int depth, int columns) {
    for (int k = 0; k < depth; k++)
        for (int n = 0; n < columns; n++) packed[(size_t)n * depth + k] = weights[(size_t)k * columns + n];
}

static void fully_connected(const int8_t *input, const int8_t *packed, int32_t *acc, int8_t *out, int rows,
                            int depth, int columns) {
    for (int m = 0; m < rows; m++)
        for (int n = 0; n < columns; n++) {
            const int8_t *a = input + (size_t)m * depth, *b = packed + (size_t)n * depth;
            int32_t sum = 0;
            for (int k = 0; k < depth; k++) sum += (int32_t)a[k] * b[k];
            acc[(size_t)m * columns + n] = sum;
        }
    for (size_t i = 0; i < (size_t)rows * columns; i++) {
        int32_t v = acc[i] >> 10; /* requantise */
        out[i] = (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v);
    }
}

int main(int argc, char **argv) {
    const char *model_path = option(argc, argv, "--model_path");
    const char *count_text = option(argc, argv, "--num_executions");
    const char *output_path = option(argc, argv, "--output_file");
    int rows = 16, depth = 512, columns = 256;
    unsigned seed = 1;
    double began = now_ms();
    if (model_path != NULL) {
        FILE *model = fopen(model_path, "r");
        if (model == NULL || fscanf(model, "%d %d %d %u", &rows, &depth, &columns, &seed) != 4) {
            fprintf(stderr, "E executorch:executor_runner.c:%d] cannot read model %s\n", __LINE__, model_path);
            return 1;
        }
        fclose(model);
    }
    int count = count_text ? atoi(count_text) : 1;
    if (rows <= 0 || depth <= 0 || columns <= 0 || count <= 0 ||
        (size_t)depth * columns + 16 + (size_t)rows * columns * 4 > ARENA_BYTES) {
        fprintf(stderr, "E executorch:executor_runner.c:%d] model does not fit the arena\n", __LINE__);
        return 2;
    }
    size_t in_bytes = (size_t)rows * depth, w_bytes = (size_t)depth * columns, out_bytes = (size_t)rows * columns;
    int8_t *weights = malloc(w_bytes), *input = malloc(in_bytes), *out = malloc(out_bytes);
    rng_state = seed;
    for (size_t i = 0; i < w_bytes; i++) weights[i] = next_int8();
    for (size_t i = 0; i < in_bytes; i++) input[i] = next_int8();
#ifdef REUSE_BUFFERS
    uint8_t *arena = calloc(1, ARENA_BYTES);
    int8_t *packed = (int8_t *)arena;
    pack(weights, packed, depth, columns);
#endif
    printf("I executorch:executor_runner.c:%d] Model loaded in %.3f ms (%s)\n", __LINE__, now_ms() - began,
#ifdef REUSE_BUFFERS
           "buffers created once"
#else
           "buffers created per inference"
#endif
    );
    double total = 0;
    for (int i = 0; i < count; i++) {
        double t0 = now_ms();
#ifndef REUSE_BUFFERS
        uint8_t *arena = calloc(1, ARENA_BYTES);
        int8_t *packed = (int8_t *)arena;
        pack(weights, packed, depth, columns);
#endif
        int32_t *acc = (int32_t *)(arena + ((w_bytes + 15) & ~(size_t)15));
        fully_connected(input, packed, acc, out, rows, depth, columns);
        /* use the rest of the arena as a method's other planned buffers would be used (never the weights) */
        size_t used = ((w_bytes + 15) & ~(size_t)15) + out_bytes * sizeof(int32_t);
        for (size_t p = used; p < ARENA_BYTES; p += 4096) arena[p] = (uint8_t)(arena[p] + 1);
#ifndef REUSE_BUFFERS
        free(arena);
#endif
        double ms = now_ms() - t0;
        total += ms;
        printf("I executorch:executor_runner.c:%d] Iteration %d of %d: %.3f ms\n", __LINE__, i + 1, count, ms);
    }
    printf("I executorch:executor_runner.c:%d] Model executed successfully %d time(s) in %.3f ms.\n", __LINE__,
           count, total);
    printf("I executorch:executor_runner.c:%d] 1 outputs:\nOutput 0: tensor(sizes=[%d, %d], [", __LINE__, rows,
           columns);
    for (int i = 0; i < 8 && (size_t)i < out_bytes; i++) printf("%s%d", i ? ", " : "", out[i]);
    printf(", ...])\n");
    if (output_path != NULL) {
        FILE *file = fopen(output_path, "wb");
        if (file == NULL || fwrite(out, 1, out_bytes, file) != out_bytes || fclose(file) != 0) {
            fprintf(stderr, "E executorch:executor_runner.c:%d] cannot write %s\n", __LINE__, output_path);
            return 1;
        }
    }
    return 0;
}
