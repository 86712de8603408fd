/*
 * ring: a self-checking MPI job for the racks migration tests.
 *
 * Usage: ring [SECONDS [BYTES [SLEEP_US]]]   (defaults 30, 4096, 5000)
 *
 * Every iteration each rank sends a BYTES-long, sequence-numbered buffer
 * with a checksum to its right neighbour and receives one from its left
 * neighbour, checks it, then takes part in an allreduce of known values
 * and checks the result. Rank 0 decides when SECONDS have passed and
 * tells the others through the allreduce, so every rank runs the same
 * number of iterations. Any mismatch prints "ring: rank R: ..." on stderr
 * and aborts the job with exit code 1.
 *
 * Waiting is done with MPI_Test* and a short sleep, not MPI's busy-polling
 * MPI_Wait, and each iteration ends with SLEEP_US of sleep: the job keeps
 * the network busy without saturating the CPUs it shares with the test.
 *
 * Output (stdout, one line each, flushed):
 *   rank R: pid P of N ready          after MPI_Init
 *   rank R: N iterations ok           after the last iteration
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RING_MAGIC   0x52494e47u          /* "RING" */
#define RING_TAG     7
#define POLL_NS      200000L              /* between two MPI_Test calls */
#define STALL_REPORT 10.0                 /* seconds: say that we wait */

struct ring_hdr {
	uint32_t magic;
	uint32_t src;                     /* sending rank */
	uint64_t seq;                     /* iteration number */
	uint32_t len;                     /* payload bytes after the header */
	uint32_t pad;
	uint64_t sum;                     /* checksum of the payload */
};

static int ring_rank = -1;

static void ring_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "ring: rank %d: ", ring_rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	MPI_Abort(MPI_COMM_WORLD, 1);
	exit(1);
}

static double ring_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void ring_nap(long ns)
{
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* A byte stream that depends on sender and iteration (xorshift64). */
static void ring_fill(unsigned char *p, size_t len, uint32_t src, uint64_t seq)
{
	uint64_t x = (seq + 1) * 0x9e3779b97f4a7c15ull ^ ((uint64_t)src << 32 | 0x5bd1u);

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (unsigned char)(x >> 24);
	}
}

/* Fletcher-64 style checksum, order-sensitive. */
static uint64_t ring_sum(const unsigned char *p, size_t len)
{
	uint64_t a = 1, b = 0;

	for (size_t i = 0; i < len; i++) {
		a = (a + p[i]) % 0xffffffffull;
		b = (b + a) % 0xffffffffull;
	}
	return b << 32 | a;
}

/* Wait for n (at most 2) requests, polling. */
static void ring_wait(int n, MPI_Request *reqs, const char *what, uint64_t seq)
{
	double start = ring_now(), next = start + STALL_REPORT;
	MPI_Status st[2];      /* not MPI_STATUSES_IGNORE: gcc 12 misreads
				* MPICH's (MPI_Status *)1 as a zero-size array */
	int done = 0;

	for (;;) {
		if (MPI_Testall(n, reqs, &done, st) != MPI_SUCCESS)
			ring_fail("iteration %" PRIu64 ": %s: MPI_Testall failed", seq, what);
		if (done)
			return;
		if (ring_now() >= next) {
			fprintf(stderr, "ring: rank %d: iteration %" PRIu64
				": %s still waiting after %.0f s\n",
				ring_rank, seq, what, ring_now() - start);
			fflush(stderr);
			next += STALL_REPORT;
		}
		ring_nap(POLL_NS);
	}
}

static void ring_check(const unsigned char *buf, size_t len, uint32_t left,
		       uint64_t seq, unsigned char *scratch)
{
	struct ring_hdr h;

	memcpy(&h, buf, sizeof(h));
	if (h.magic != RING_MAGIC)
		ring_fail("iteration %" PRIu64 ": bad magic 0x%08x from rank %u",
			  seq, h.magic, left);
	if (h.src != left || h.seq != seq || h.len != len - sizeof(h))
		ring_fail("iteration %" PRIu64 ": expected rank %u seq %" PRIu64
			  " len %zu, got rank %u seq %" PRIu64 " len %u", seq, left,
			  seq, len - sizeof(h), h.src, h.seq, h.len);
	if (ring_sum(buf + sizeof(h), h.len) != h.sum)
		ring_fail("iteration %" PRIu64 ": checksum mismatch in message "
			  "from rank %u", seq, left);
	ring_fill(scratch, h.len, left, seq);
	if (memcmp(scratch, buf + sizeof(h), h.len) != 0)
		ring_fail("iteration %" PRIu64 ": payload from rank %u differs "
			  "from the expected pattern", seq, left);
}

static long ring_arg(int argc, char **argv, int i, long def, long min, long max)
{
	char *end;
	long v;

	if (argc <= i)
		return def;
	errno = 0;
	v = strtol(argv[i], &end, 10);
	if (errno || *end || end == argv[i] || v < min || v > max) {
		fprintf(stderr, "usage: ring [SECONDS [BYTES [SLEEP_US]]]: "
			"bad argument %s\n", argv[i]);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long seconds = ring_arg(argc, argv, 1, 30, 0, 86400);
	long bytes = ring_arg(argc, argv, 2, 4096, sizeof(struct ring_hdr), 1 << 24);
	long sleep_us = ring_arg(argc, argv, 3, 5000, 0, 10000000);
	size_t len = (size_t)bytes, plen = len - sizeof(struct ring_hdr);
	int size, stop = 0;
	uint64_t seq;
	double start;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &ring_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);

	unsigned char *sbuf = malloc(len), *rbuf = malloc(len), *scratch = malloc(len);
	if (!sbuf || !rbuf || !scratch)
		ring_fail("out of memory for %zu-byte buffers", len);
	uint32_t right = (uint32_t)((ring_rank + 1) % size);
	uint32_t left = (uint32_t)((ring_rank + size - 1) % size);

	printf("rank %d: pid %ld of %d ready\n", ring_rank, (long)getpid(), size);
	fflush(stdout);
	start = ring_now();

	for (seq = 0; !stop; seq++) {
		struct ring_hdr h = {
			.magic = RING_MAGIC, .src = (uint32_t)ring_rank,
			.seq = seq, .len = (uint32_t)plen,
		};
		MPI_Request reqs[2];

		ring_fill(sbuf + sizeof(h), plen, h.src, seq);
		h.sum = ring_sum(sbuf + sizeof(h), plen);
		memcpy(sbuf, &h, sizeof(h));
		memset(rbuf, 0, len);
		MPI_Irecv(rbuf, (int)len, MPI_BYTE, (int)left, RING_TAG,
			  MPI_COMM_WORLD, &reqs[0]);
		MPI_Isend(sbuf, (int)len, MPI_BYTE, (int)right, RING_TAG,
			  MPI_COMM_WORLD, &reqs[1]);
		ring_wait(2, reqs, "ring exchange", seq);
		ring_check(rbuf, len, left, seq, scratch);

		/* [0]: sum of (rank+1)*(seq+1); [1]: sum of seq; [2]: stop flag
		 * (only rank 0 decides); [3]: sum of the checksums sent. */
		int64_t in[4] = {
			(int64_t)(ring_rank + 1) * (int64_t)(seq + 1),
			(int64_t)seq,
			ring_rank == 0 && ring_now() - start >= (double)seconds,
			(int64_t)(h.sum & 0xffffffffu),
		};
		int64_t out[4] = { -1, -1, -1, -1 };
		MPI_Request ar;

		MPI_Iallreduce(in, out, 4, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD, &ar);
		ring_wait(1, &ar, "allreduce", seq);
		int64_t want0 = (int64_t)(seq + 1) * size * (size + 1) / 2;
		int64_t want3 = 0;
		for (int r = 0; r < size; r++) {
			ring_fill(scratch, plen, (uint32_t)r, seq);
			want3 += (int64_t)(ring_sum(scratch, plen) & 0xffffffffu);
		}
		if (out[0] != want0 || out[1] != (int64_t)seq * size ||
		    out[2] < 0 || out[2] > 1 || out[3] != want3)
			ring_fail("iteration %" PRIu64 ": allreduce gave {%" PRId64
				  ", %" PRId64 ", %" PRId64 ", %" PRId64 "}, expected {%"
				  PRId64 ", %" PRId64 ", 0 or 1, %" PRId64 "}", seq,
				  out[0], out[1], out[2], out[3], want0,
				  (int64_t)seq * size, want3);
		stop = out[2] != 0;
		if (sleep_us)
			ring_nap(sleep_us * 1000L);
	}

	printf("rank %d: %" PRIu64 " iterations ok\n", ring_rank, seq);
	fflush(stdout);
	free(scratch);
	free(rbuf);
	free(sbuf);
	MPI_Finalize();
	return 0;
}
