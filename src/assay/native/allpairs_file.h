/*
 * allpairs_file.h - the all-pairs matrix file (allpairs.bin) as native/allpairs.c writes it:
 * the blocks' encoding and a writer thread that appends them, so that the process measuring
 * never waits on the file system.  The format (docs/cluster.md, "The matrix file"), all
 * little-endian whatever the host's order:
 *
 *   header  "ASSAYAP1", u32 header_len, u32 n_nodes, u32 lat_size, u32 bw_size, u32 window,
 *           f32 pair_budget_s, n x (u16 len, host name), zero padding to a multiple of 8
 *   round   u32 "RUND", u32 round, u32 kind, u32 count, u32 lat_iters, u32 bw_iters,
 *           f64 t_start, f64 wall_s, then count x (u16 a, u16 b, f32 latency_s, f32 bw_Bps)
 *   end     u32 "END!", u32 rounds, u32 pairs, u32 flags (bit 0: a rank stopped answering)
 *
 * The writer: apf_open, then apf_put (a copy is queued), then apf_close (everything reaches
 * the file: fflush after each batch, fsync every APF_FSYNC_S and at the end); apf_hold keeps
 * the thread from writing while the process measures.  Each returns 0
 * or an errno value, the first error the thread met included.  One writer per process.
 * Needs probe.h first (its clock).
 */
#ifndef ASSAY_ALLPAIRS_FILE_H
#define ASSAY_ALLPAIRS_FILE_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define APF_MAGIC "ASSAYAP1"
#define APF_ROUND_MARK 0x444E5552u /* "RUND" */
#define APF_END_MARK 0x21444E45u   /* "END!" */
#define APF_FLAG_TIMED_OUT 1u
#define APF_HEAD_BYTES 32   /* the header before its host names */
#define APF_ROUND_BYTES 40  /* a round block before its pairs */
#define APF_PAIR_BYTES 12
#define APF_END_BYTES 16
#define APF_FSYNC_S 10.0 /* a lost node keeps what reached the disk, not its page cache */

static inline void apf_u16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static inline void apf_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline void apf_f32(unsigned char *p, float f)
{
    uint32_t v;
    memcpy(&v, &f, 4);
    apf_u32(p, v);
}

static inline void apf_f64(unsigned char *p, double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* The header's length for these host names (hosts[i] at base + i * stride). */
static inline size_t apf_header_len(const char *base, size_t stride, int n)
{
    size_t len = APF_HEAD_BYTES;
    for (int i = 0; i < n; i++)
        len += 2 + strlen(base + (size_t)i * stride);
    return (len + 7) / 8 * 8;
}

/* The header into h (apf_header_len bytes, zeroed by the caller). */
static inline void apf_header(unsigned char *h, size_t len, const char *base, size_t stride,
                              int n, uint32_t lat_size, uint32_t bw_size, uint32_t window,
                              float budget)
{
    memcpy(h, APF_MAGIC, 8);
    apf_u32(h + 8, (uint32_t)len);
    apf_u32(h + 12, (uint32_t)n);
    apf_u32(h + 16, lat_size);
    apf_u32(h + 20, bw_size);
    apf_u32(h + 24, window);
    apf_f32(h + 28, budget);
    unsigned char *p = h + APF_HEAD_BYTES;
    for (int i = 0; i < n; i++) {
        const char *name = base + (size_t)i * stride;
        size_t k = strlen(name);
        apf_u16(p, (unsigned)k);
        memcpy(p + 2, name, k);
        p += 2 + k;
    }
}

/* A round block's heading into b; its count pairs follow at b + APF_ROUND_BYTES. */
static inline void apf_round_head(unsigned char *b, uint32_t round, uint32_t kind,
                                  uint32_t count, uint32_t lat_iters, uint32_t bw_iters,
                                  double t_start, double wall)
{
    apf_u32(b, APF_ROUND_MARK);
    apf_u32(b + 4, round);
    apf_u32(b + 8, kind);
    apf_u32(b + 12, count);
    apf_u32(b + 16, lat_iters);
    apf_u32(b + 20, bw_iters);
    apf_f64(b + 24, t_start);
    apf_f64(b + 32, wall);
}

static inline void apf_pair(unsigned char *p, unsigned a, unsigned b, float lat, float bw)
{
    apf_u16(p, a);
    apf_u16(p + 2, b);
    apf_f32(p + 4, lat);
    apf_f32(p + 8, bw);
}

static inline void apf_end(unsigned char *b, uint32_t rounds, uint32_t pairs, uint32_t flags)
{
    apf_u32(b, APF_END_MARK);
    apf_u32(b + 4, rounds);
    apf_u32(b + 8, pairs);
    apf_u32(b + 12, flags);
}

/* ---- the writer thread ---- */

typedef struct apf_chunk {
    struct apf_chunk *next;
    size_t len;
    unsigned char data[];
} apf_chunk;

static struct {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    apf_chunk *head, *tail;
    int closing, error, held;
    FILE *f;
} apf_ = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static inline void *apf_main_(void *arg)
{
    (void)arg;
    double synced = probe_now();
    pthread_mutex_lock(&apf_.mu);
    for (;;) {
        while ((!apf_.head || apf_.held) && !apf_.closing)
            pthread_cond_wait(&apf_.cv, &apf_.mu);
        apf_chunk *list = apf_.head;
        apf_.head = apf_.tail = NULL;
        int closing = apf_.closing;
        pthread_mutex_unlock(&apf_.mu);
        int err = 0;
        while (list) {
            apf_chunk *next = list->next;
            if (!err && fwrite(list->data, 1, list->len, apf_.f) != list->len)
                err = errno ? errno : EIO;
            free(list);
            list = next;
        }
        if (!err && fflush(apf_.f))
            err = errno;
        if (!err && (closing || probe_now() - synced > APF_FSYNC_S)) {
            if (fsync(fileno(apf_.f)) && errno != EINVAL && errno != EROFS)
                err = errno; /* (a pipe or a file system without fsync: not an error) */
            synced = probe_now();
        }
        pthread_mutex_lock(&apf_.mu);
        if (err && !apf_.error)
            apf_.error = err;
        if (closing && !apf_.head)
            break;
    }
    pthread_mutex_unlock(&apf_.mu);
    return NULL;
}

static inline int apf_open(const char *path)
{
    apf_.closing = apf_.held = apf_.error = 0; /* a second file after the first's close */
    apf_.f = fopen(path, "wb");
    if (!apf_.f)
        return errno;
    return pthread_create(&apf_.thread, NULL, apf_main_, NULL) ? EAGAIN : 0;
}

/* Queue a copy of the bytes; 0, or the first error met so far. */
static inline int apf_put(const unsigned char *data, size_t len)
{
    apf_chunk *c = malloc(sizeof *c + len);
    if (!c)
        return ENOMEM;
    c->next = NULL;
    c->len = len;
    memcpy(c->data, data, len);
    pthread_mutex_lock(&apf_.mu);
    int err = apf_.error;
    if (apf_.tail)
        apf_.tail->next = c;
    else
        apf_.head = c;
    apf_.tail = c;
    pthread_cond_signal(&apf_.cv);
    pthread_mutex_unlock(&apf_.mu);
    return err;
}

/* held 1: the thread starts no write until held 0 (rank 0 is measuring: on its node the
 * write's CPU time and the file system's interrupts would sit in its timed windows); a write
 * under way finishes.  apf_close writes whatever is held. */
static inline void apf_hold(int held)
{
    pthread_mutex_lock(&apf_.mu);
    apf_.held = held;
    if (!held)
        pthread_cond_signal(&apf_.cv);
    pthread_mutex_unlock(&apf_.mu);
}

/* Everything queued reaches the file (and the disk) before this returns; 0 or an errno. */
static inline int apf_close(void)
{
    pthread_mutex_lock(&apf_.mu);
    apf_.closing = 1;
    pthread_cond_signal(&apf_.cv);
    pthread_mutex_unlock(&apf_.mu);
    pthread_join(apf_.thread, NULL);
    int err = apf_.error;
    if (fclose(apf_.f) && !err)
        err = errno;
    return err;
}

#endif /* ASSAY_ALLPAIRS_FILE_H */
