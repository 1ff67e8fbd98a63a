/*-------------------------------------------------------------------------
 * partitions_assign.c
 *		The target owner of every segment of a partition group.
 *
 * Every session computes the assignment alone, from the live members it
 * reads (no leader), so it must be a deterministic function of the
 * members' names and weights: the same answer on every platform (our own
 * hash, integer scores and quotas, no libm).
 *
 * Three assignors: sticky (weighted rendezvous preference bounded by
 * quotas within 1 of each member's fair share), range (contiguous slices
 * in member-name order, of the same quotas) and rendezvous (no quotas).
 *
 * Cost: segments x members hashes, once per membership change; members x
 * segments above COORD_ASSIGN_MAX_WORK is an ERROR (54000) in the backend;
 * CHECK_FOR_INTERRUPTS every 256 segments and at every re-score.
 *
 * Pure: no catalog; work memory of 12 bytes a segment (palloc in the
 * backend, freed before returning, also on error; malloc in the standalone
 * harness, built with -DCOORD_ASSIGN_STANDALONE).
 *
 * Quotas, what a join or leave moves, why every platform agrees, and the
 * cost: src/partitions/README.md, "The assignment (partitions_assign.c)".
 *-------------------------------------------------------------------------
 */
#ifndef COORD_ASSIGN_STANDALONE
#include "postgres.h"

#include "miscadmin.h"
#define ASSIGN_INTERRUPTS()	CHECK_FOR_INTERRUPTS()
#else
#include <stdlib.h>
#define ASSIGN_INTERRUPTS()	((void) 0)
#endif

#include "partitions/partitions_assign.h"

#include <math.h>
#include <string.h>

static uint64_t
mix64(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

static uint64_t
name_hash(const char *name, size_t len)
{
	uint64_t	h = UINT64_C(0xcbf29ce484222325);

	for (size_t i = 0; i < len; i++)
	{
		h ^= (unsigned char) name[i];
		h *= UINT64_C(0x100000001b3);
	}
	return mix64(h);
}

static uint64_t
combine(uint64_t nh, uint64_t sh)
{
	return mix64(nh ^ sh);
}

uint64_t
part_hash(const char *name, size_t len, int segment)
{
	return combine(name_hash(name, len), mix64((uint64_t) (uint32_t) segment));
}

/*
 * -log2 in integers.  log2_tab[k] = log2(1 + k / 2^LOG_BITS) in units of
 * 2^-32, computed once by the bit-at-a-time squaring method (no libm), so
 * every platform builds the same table.
 */
#define LOG_BITS	12
#define LOG_FRAC	32
static uint32_t log2_tab[1 << LOG_BITS];
static bool log2_ready = false;

/* log2(m / 2^31) in units of 2^-32, for 2^31 <= m < 2^32 */
static uint32_t
log2_frac_slow(uint64_t m)
{
	uint32_t	r = 0;

	for (int bit = LOG_FRAC - 1; bit >= 0; bit--)
	{
		m = (m * m) >> 31;		/* m < 2^32 here, so m * m fits */
		if (m >= (UINT64_C(1) << 32))
		{
			r |= UINT32_C(1) << bit;
			m >>= 1;
		}
	}
	return r;
}

static void
log2_init(void)
{
	for (int k = 0; k < (1 << LOG_BITS); k++)
	{
		/* 1 + k / 2^LOG_BITS as m / 2^31 */
		uint64_t	m = (UINT64_C(1) << 31) + ((uint64_t) k << (31 - LOG_BITS));

		log2_tab[k] = log2_frac_slow(m);
	}
	log2_ready = true;
}

/*
 * E = -log2(u) for u = (x + 1/2) / 2^64, in units of 2^-32 (< 2^39): the
 * exponential draw of a rendezvous score, up to the constant ln 2.
 */
static uint64_t
neg_log2(uint64_t x)
{
	int			lz = 0;
	uint64_t	m;
	uint64_t	idx,
				rest,
				lo,
				hi,
				frac;

	x |= 1;						/* never 0: log of u > 0 */
	m = x;
	while (!(m & (UINT64_C(1) << 63)))
	{
		m <<= 1;
		lz++;
	}
	/* x = 2^(63 - lz) * (1 + t), t = the 63 bits below the top one */
	idx = (m >> (63 - LOG_BITS)) & ((UINT64_C(1) << LOG_BITS) - 1);
	rest = (m >> (63 - LOG_BITS - 20)) & ((UINT64_C(1) << 20) - 1);
	lo = log2_tab[idx];
	hi = idx + 1 == (UINT64_C(1) << LOG_BITS) ? (UINT64_C(1) << LOG_FRAC) : log2_tab[idx + 1];
	frac = lo + (((hi - lo) * rest) >> 20);
	/* -log2(u) = 64 - (63 - lz) - frac = 1 + lz - frac */
	return ((uint64_t) (1 + lz) << LOG_FRAC) - frac;
}

static bool
valid(const PartMember *members, int nmembers, int segments)
{
	if (nmembers < 1 || nmembers > PART_MAX_MEMBERS ||
		segments < 1 || segments > PART_MAX_SEGMENTS)
		return false;
	for (int i = 0; i < nmembers; i++)
	{
		if (!(members[i].weight > 0) || !isfinite(members[i].weight))
			return false;
		if (i > 0 && strcmp(members[i - 1].name, members[i].name) >= 0)
			return false;
	}
	return true;
}

/* remainder order: larger first, then the first name */
static const uint64_t *cmp_rem;

static int
cmp_remainder(const void *a, const void *b)
{
	int			i = *(const int *) a;
	int			j = *(const int *) b;

	if (cmp_rem[i] != cmp_rem[j])
		return cmp_rem[i] > cmp_rem[j] ? -1 : 1;
	return i < j ? -1 : (i > j ? 1 : 0);
}

/*
 * Weights as integers: w_i / w_max in units of 2^-32 (at least 1), the one
 * floating-point step (a correctly rounded division, exact scaling).
 */
static void
fixed_weights(const PartMember *members, int nmembers, uint64_t *wq)
{
	double		wmax = 0;

	for (int i = 0; i < nmembers; i++)
		if (members[i].weight > wmax)
			wmax = members[i].weight;
	for (int i = 0; i < nmembers; i++)
	{
		double		r = members[i].weight / wmax * 4294967296.0;

		wq[i] = r < 1 ? 1 : (uint64_t) r;
	}
}

/*
 * quota[i]: floor or ceil of segments * w_i / W, summing to segments
 * (largest remainder), in integers: segments * wq < 2^48 and W < 2^42.
 */
void
part_quotas(const PartMember *members, int nmembers, int segments, int *quota)
{
	uint64_t	wq[PART_MAX_MEMBERS];
	uint64_t	rem[PART_MAX_MEMBERS];
	int			order[PART_MAX_MEMBERS];
	uint64_t	total = 0;
	int			given = 0;

	fixed_weights(members, nmembers, wq);
	for (int i = 0; i < nmembers; i++)
		total += wq[i];
	for (int i = 0; i < nmembers; i++)
	{
		uint64_t	num = (uint64_t) segments * wq[i];

		quota[i] = (int) (num / total);
		rem[i] = num % total;
		given += quota[i];
		order[i] = i;
	}
	/* the floors leave fewer than nmembers segments over */
	cmp_rem = rem;
	qsort(order, nmembers, sizeof(int), cmp_remainder);
	for (int k = 0; given < segments; k++)
	{
		quota[order[k]]++;
		given++;
	}
}

/*
 * Scores in integers: E in units of 2^-24 (< 2^31) times the member's
 * inverse weight w_max / w_i in units of 2^-16, capped at 2^16 (< 2^33), so
 * a product stays below 2^64.  The cap only flattens the preferences of
 * members lighter than 1/65536 of the heaviest; quotas stay exact.
 */
#define INV_CAP		(UINT64_C(1) << 32)

static void
fixed_inverses(const PartMember *members, int nmembers, uint64_t *invq)
{
	double		wmax = 0;

	for (int i = 0; i < nmembers; i++)
		if (members[i].weight > wmax)
			wmax = members[i].weight;
	for (int i = 0; i < nmembers; i++)
	{
		double		r = wmax / members[i].weight * 65536.0;

		invq[i] = r >= (double) INV_CAP ? INV_CAP : (uint64_t) r;
	}
}

/*
 * The member with quota left that scores segment s lowest (ties: the first
 * name).  A lower bound skips the log: -log2(u) >= (1 - u) / ln 2, and
 * 369/256 < 1 / ln 2; 1 - u is the hash's distance from 2^64.  The bound is
 * below the computed E (whose table interpolation only errs upwards), so a
 * skipped member could not have won.
 */
static int32_t
best_member(const uint64_t *nh, const uint64_t *invq, const int *left, int nmembers,
			uint64_t sh, uint64_t *best_score)
{
	int32_t		best = -1;
	uint64_t	bs = 0;

	for (int i = 0; i < nmembers; i++)
	{
		uint64_t	h;
		uint64_t	sc;

		if (left[i] <= 0)
			continue;
		h = combine(nh[i], sh);
		if (best >= 0 && ((((~h) >> 40) * 369) >> 8) * invq[i] >= bs)
			continue;
		sc = (neg_log2(h) >> 8) * invq[i];
		if (best < 0 || sc < bs)
		{
			best = i;
			bs = sc;
		}
	}
	*best_score = bs;
	return best;
}

/* a min-heap of (score, segment) */
typedef struct AssignHeap
{
	uint64_t   *key;
	int32_t    *seg;
	int			n;
} AssignHeap;

static inline bool
heap_less(const AssignHeap *h, int a, int b)
{
	return h->key[a] < h->key[b] || (h->key[a] == h->key[b] && h->seg[a] < h->seg[b]);
}

static void
heap_swap(AssignHeap *h, int a, int b)
{
	uint64_t	k = h->key[a];
	int32_t		s = h->seg[a];

	h->key[a] = h->key[b];
	h->seg[a] = h->seg[b];
	h->key[b] = k;
	h->seg[b] = s;
}

static void
heap_down(AssignHeap *h, int i)
{
	for (;;)
	{
		int			l = 2 * i + 1;
		int			m = i;

		if (l < h->n && heap_less(h, l, m))
			m = l;
		if (l + 1 < h->n && heap_less(h, l + 1, m))
			m = l + 1;
		if (m == i)
			return;
		heap_swap(h, i, m);
		i = m;
	}
}

static void
assign_sticky(const PartMember *members, int nmembers, int segments, int32_t *owner,
			  char *mem)
{
	uint64_t	nh[PART_MAX_MEMBERS];
	uint64_t	invq[PART_MAX_MEMBERS];
	int			left[PART_MAX_MEMBERS];
	AssignHeap	heap;

	if (!log2_ready)
		log2_init();
	part_quotas(members, nmembers, segments, left);
	fixed_inverses(members, nmembers, invq);
	for (int i = 0; i < nmembers; i++)
		nh[i] = name_hash(members[i].name, members[i].len);

	heap.key = (uint64_t *) mem;
	heap.seg = (int32_t *) (mem + sizeof(uint64_t) * (size_t) segments);
	heap.n = segments;

	/* each segment's best member; owner[] holds it until it is final */
	for (int s = 0; s < segments; s++)
	{
		if ((s & 255) == 255)
			ASSIGN_INTERRUPTS();
		owner[s] = best_member(nh, invq, left, nmembers,
							   mix64((uint64_t) (uint32_t) s), &heap.key[s]);
		heap.seg[s] = s;
	}
	for (int i = segments / 2 - 1; i >= 0; i--)
		heap_down(&heap, i);

	/*
	 * Lowest score first: the segment goes to its member if that one has
	 * quota left, else it is scored again against those that do.  The quotas
	 * sum to segments, so someone always has quota left.
	 */
	while (heap.n > 0)
	{
		int32_t		s = heap.seg[0];
		int32_t		m = owner[s];

		if (left[m] > 0)
		{
			left[m]--;
			heap.n--;
			if (heap.n > 0)
			{
				heap_swap(&heap, 0, heap.n);
				heap_down(&heap, 0);
			}
			continue;
		}
		ASSIGN_INTERRUPTS();
		owner[s] = best_member(nh, invq, left, nmembers,
							   mix64((uint64_t) (uint32_t) s), &heap.key[0]);
		heap_down(&heap, 0);
	}
}

static void
assign_rendezvous(const PartMember *members, int nmembers, int segments, int32_t *owner)
{
	uint64_t	nh[PART_MAX_MEMBERS];
	uint64_t	invq[PART_MAX_MEMBERS];
	int			all[PART_MAX_MEMBERS];
	uint64_t	score;

	if (!log2_ready)
		log2_init();
	fixed_inverses(members, nmembers, invq);
	for (int i = 0; i < nmembers; i++)
	{
		nh[i] = name_hash(members[i].name, members[i].len);
		all[i] = 1;
	}
	for (int s = 0; s < segments; s++)
	{
		if ((s & 255) == 255)
			ASSIGN_INTERRUPTS();
		owner[s] = best_member(nh, invq, all, nmembers, mix64((uint64_t) (uint32_t) s), &score);
	}
}

static void
assign_range(const PartMember *members, int nmembers, int segments, int32_t *owner)
{
	int			quota[PART_MAX_MEMBERS];
	int			s = 0;

	part_quotas(members, nmembers, segments, quota);
	for (int i = 0; i < nmembers; i++)
		for (int k = 0; k < quota[i]; k++)
			owner[s++] = i;
}

bool
part_assign(const PartMember *members, int nmembers, int segments,
			PartAssignor assignor, int32_t *owner)
{
	if (!valid(members, nmembers, segments))
		return false;
	if ((int64_t) nmembers * segments > COORD_ASSIGN_MAX_WORK)
	{
#ifndef COORD_ASSIGN_STANDALONE
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("partition group too large to assign: %d members of %d segments",
						nmembers, segments),
				 errdetail("Members times segments may be at most %d.", COORD_ASSIGN_MAX_WORK)));
#endif
		return false;
	}
	if (assignor == PART_RANGE)
		assign_range(members, nmembers, segments, owner);
	else if (assignor == PART_RENDEZVOUS)
		assign_rendezvous(members, nmembers, segments, owner);
	else
	{
		size_t		size = (sizeof(uint64_t) + sizeof(int32_t)) * (size_t) segments;

#ifndef COORD_ASSIGN_STANDALONE
		/* the caller's context may be long-lived: free even on cancel */
		char	   *mem = palloc(size);

		PG_TRY();
		{
			assign_sticky(members, nmembers, segments, owner, mem);
		}
		PG_FINALLY();
		{
			pfree(mem);
		}
		PG_END_TRY();
#else
		char	   *mem = malloc(size);

		if (mem == NULL)
			abort();
		assign_sticky(members, nmembers, segments, owner, mem);
		free(mem);
#endif
	}
	return true;
}
